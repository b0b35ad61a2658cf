"""Fixtures every test layer shares: the one Spark session of a test run, started only when a
test asks for it, and a Spark configuration folder for the JVMs that CLI subprocesses start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.spark.session import get_spark

# Test JVMs are short-lived and cold: C1-only JIT and the parallel collector halve session
# start and the first Delta jobs on two cores. Long-running jobs want C2, so this stays here.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark(
        app_name="segcompact-tests",
        master="local[2]",
        conf={"spark.driver.extraJavaOptions": JVM_OPTIONS},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_conf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``SPARK_CONF_DIR`` giving CLI subprocesses the JIT settings of the test session.

    A user's way to tune the driver JVM that ``segcompact`` starts; here it only makes the
    short-lived test JVMs start faster.
    """
    folder = tmp_path_factory.mktemp("spark-conf")
    (folder / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {JVM_OPTIONS}\n")
    return folder
