"""The one Spark session every spark test shares: local, two cores, Delta Lake configured."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from segcompact.spark.session import get_spark

# Test JVMs are short-lived and cold: C1-only JIT and the parallel collector halve session
# start and the first Delta jobs on two cores. Long-running jobs want C2, so this stays here.
_TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark(
        app_name="segcompact-tests",
        master="local[2]",
        conf={"spark.driver.extraJavaOptions": _TEST_JVM_OPTIONS},
    )
    yield session
    session.stop()
