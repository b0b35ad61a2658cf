"""Fixtures of the end-to-end tests: the one shared Spark session, and a Spark configuration
folder for the JVMs the CLI subprocesses start."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark.conftest import spark

__all__ = ["spark", "spark_conf_dir"]

# As the test session's own JVM (tests/spark/conftest.py): C1-only JIT and the parallel
# collector halve the start of a short-lived, cold JVM.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


@pytest.fixture(scope="session")
def spark_conf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``SPARK_CONF_DIR`` giving CLI subprocesses the JIT settings of the test session.

    A user's way to tune the driver JVM that ``segcompact`` starts; here it only makes the
    short-lived test JVMs start faster.
    """
    folder = tmp_path_factory.mktemp("spark-conf")
    (folder / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {JVM_OPTIONS}\n")
    return folder
