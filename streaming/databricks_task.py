"""Databricks entry point (a ``spark_python_task``): ``segcompact run`` on a Databricks cluster.

Task parameters, as in deploy/databricks/databricks.yml::

    ["--config", "/Workspace/.../compactor.toml"]        # or a /Volumes/<c>/<s>/<v>/... path
    ["--config", "/Volumes/main/segcompact/conf/compactor.toml", "--once"]

The config is read with Python's own file API on the driver, so give a path the driver sees
as a local file: a workspace file (``/Workspace/...``) or a Unity Catalog volume
(``/Volumes/...``); ``dbfs:/`` URIs are not read.

Nothing happens here but argument parsing, a check that the job loads and attaching to the
cluster's session: the job is ``segcompact.cli.main(["run", ...])``, the same code path as
``segcompact run``. On Databricks the Python process does not own a SparkSession until it asks
for one, so this file asks the runtime for its session first (no options: Databricks owns its
settings and has Delta built in); ``get_spark()`` inside the job then returns that active
session as it is. Off Databricks (a local try) no session is attached here and ``get_spark()``
starts the usual local one.

Runtime: Databricks Runtime 19 or later (Apache Spark 4.2.0). The ``kafka-segments`` source is
a Python streaming data source written against PySpark 4.2's API (admission control,
``SupportsTriggerAvailableNow``); on 17.x and 18 (Spark 4.0, 4.1) it does not load, and this
file says so in one line and exits 2 before any Spark work.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    # One line and exit code 2 for a bad argument, as the segcompact command line does.
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = _Parser(
        prog="databricks_task.py", description="Run the segcompact streaming job on Databricks."
    )
    parser.add_argument(
        "--config", required=True, metavar="F", help="compactor.toml: a /Workspace or /Volumes path"
    )
    parser.add_argument(
        "--once", action="store_true", help="process what is there, then exit (availableNow)"
    )
    return parser.parse_args(argv)


def _on_databricks() -> bool:
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from segcompact.cli import main as segcompact_main
    except ImportError as e:
        print(
            f"databricks_task: error: cannot import segcompact ({e}); add the segcompact wheel "
            "to the task's libraries",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        import segcompact.spark.job  # noqa: F401  (its source needs PySpark's 4.2 data source API)
    except ImportError as e:
        import pyspark

        print(
            f"databricks_task: error: segcompact's streaming source does not load on PySpark "
            f"{pyspark.__version__} ({e}); use Databricks Runtime 19 or later (Apache Spark 4.2)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if _on_databricks():
        from pyspark.sql import SparkSession

        SparkSession.builder.getOrCreate()  # the cluster's session becomes the active one
    run = ["run", "--config", args.config, *(["--once"] if args.once else [])]
    return int(segcompact_main(run))


if __name__ == "__main__":
    sys.exit(main())
