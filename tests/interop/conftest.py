"""The session fixture of the interop tests: one Kafka log, compacted twice (compacted.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from tests.interop.compacted import Compacted, compact_twice
from tests.support.jvm import kafka_jars_available, missing_kafka_message


@pytest.fixture(scope="session")
def compacted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compacted]:
    if not kafka_jars_available():
        # Not a skip: the test command fetches Kafka, so its absence is a failure.
        pytest.fail(missing_kafka_message())
    result = compact_twice(spark, tmp_path_factory.mktemp("interop"))
    yield result
    # Shown with `pytest -s`.
    print("\ninterop timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in result.timings.items()))
