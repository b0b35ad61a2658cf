"""spark-submit entry point: ``segcompact run`` under ``spark-submit``.

    spark-submit [spark options] streaming/segcompact_job.py --config compactor.toml [--once]

Nothing happens here but argument parsing: the job is ``segcompact.cli.main(["run", ...])``,
the same code path as the ``segcompact run`` console script. It loads the config (a bad or
missing file ends with one line on stderr and exit code 2, before any Spark work), then takes
the session from ``segcompact.spark.session.get_spark()``, which under spark-submit leaves
master, jars and resources to spark-submit's command line and adds only segcompact's SQL
settings (Delta's extension and catalog, UTC, Arrow).

``--once`` processes what is available (Trigger.AvailableNow), runs the upkeep that is due and
exits 0; without it the job runs until SIGTERM/SIGINT reaches this Python process and then
stops after the micro-batch in flight. The segcompact wheel and its dependencies must be
importable by the driver's Python (see deploy/spark-submit/submit.sh).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    # One line and exit code 2 for a bad argument, as the segcompact command line does.
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def parse_args(argv: Sequence[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    parser = _Parser(prog=prog, description="Run the segcompact streaming job (segcompact run).")
    parser.add_argument("--config", required=True, metavar="F", help="compactor.toml to run with")
    parser.add_argument(
        "--once", action="store_true", help="process what is there, then exit (availableNow)"
    )
    return parser.parse_args(argv)


def run_argv(args: argparse.Namespace) -> list[str]:
    """The ``segcompact`` command line these arguments stand for."""
    return ["run", "--config", args.config, *(["--once"] if args.once else [])]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from segcompact.cli import main as segcompact_main
    except ImportError as e:
        print(
            f"segcompact_job: error: cannot import segcompact ({e}); install the segcompact wheel "
            f"into the Python that runs the driver ({sys.executable}) or pass it with --py-files",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return int(segcompact_main(run_argv(args)))


if __name__ == "__main__":
    sys.exit(main())
