"""``segcompact status`` reads the tables by delta-rs (no JVM) where it can, by Spark where it
cannot: both give the same rows."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import load_config
from segcompact.delta.sql import DeltaSql
from segcompact.samples import generate_partition
from segcompact.spark.job import Compactor
from segcompact.spark.table_reader import SparkSql
from segcompact.status import partition_status, status_views
from tests.support.config import write_config

pytestmark = pytest.mark.spark


def test_delta_rs_and_spark_give_the_same_status(spark: SparkSession, tmp_path: Path) -> None:
    rnd = random.Random(3)
    for topic in ("plain", "lagged"):
        for partition in (0, 1):
            for segment in generate_partition(rnd, records=80):
                segment.write(tmp_path / "in" / f"{topic}-{partition}")
    config = load_config(
        write_config(
            tmp_path / "job",
            [tmp_path / "in"],
            rolled_only=False,
            topics={"lagged": {"min.compaction.lag.ms": 20_000}},
        )
    )
    native = DeltaSql.open(status_views(config), config.storage)
    assert native is not None
    assert partition_status(native, config, 0) == [], "no table yet: nothing to show"

    now = 1_060_000  # the generated records are stamped within 50 s of 1,000,000
    Compactor(spark, config, ManualClock(now)).run_once()
    native = DeltaSql.open(status_views(config), config.storage)
    assert native is not None
    by_delta_rs = partition_status(native, config, now)
    by_spark = partition_status(SparkSql(spark, status_views(config)), config, now)
    assert by_delta_rs == by_spark
    assert [(r["topic"], r["partition"]) for r in by_delta_rs] == [
        ("lagged", 0),
        ("lagged", 1),
        ("plain", 0),
        ("plain", 1),
    ]
    plain = [r for r in by_delta_rs if r["topic"] == "plain"]
    lagged = [r for r in by_delta_rs if r["topic"] == "lagged"]
    assert all(r["keys"] > 0 and r["young_records"] == 0 for r in plain)
    assert any(r["tombstones_pending"] > 0 for r in plain)
    assert any(r["next_horizon_ms"] is not None for r in plain)
    assert all(r["young_records"] > 0 for r in lagged)
