"""The one Spark session of a test run, started only when a test asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from segcompact.spark.session import get_spark
from tests.support.spark import JVM_OPTIONS


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark(
        app_name="segcompact-tests",
        master="local[2]",
        conf={"spark.driver.extraJavaOptions": JVM_OPTIONS},
    )
    yield session
    session.stop()
