"""``segcompact status`` and the materialiser read "due" from one decision, on the same table."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.compaction.triggers import Reason
from segcompact.config import load_config
from segcompact.spark.materialize import Materializer
from segcompact.spark.table_reader import SparkSql
from segcompact.spark.tables import PARTITIONS_SCHEMA, STATE_SCHEMA, Tables
from segcompact.status import read_status
from tests.support.config import write_config
from tests.support.table_rows import HOUR, NOW, partition_row, tombstone_row

pytestmark = pytest.mark.spark


def test_status_calls_due_exactly_what_the_materialiser_writes(
    spark: SparkSession, tmp_path: Path
) -> None:
    config = load_config(write_config(tmp_path, [tmp_path / "segments"]))
    tables = Tables.of(config)
    tables.ensure(spark)
    partitions = [
        partition_row(0, dirty=100, clean=0),  # never compacted: dirty ratio 1
        partition_row(1, log_start=40),  # KIP-107 moved the log start since the output was written
        # The output still shows a tombstone whose horizon passed; the state's is later.
        partition_row(2, output_horizon=NOW - 1),
        # The state's tombstone expired, but the published output holds none.
        partition_row(3),
        partition_row(4, dirty=100, clean=0, uncleanable="00000.log: corrupt batch"),
        partition_row(5),  # clean
    ]
    spark.createDataFrame(partitions, PARTITIONS_SCHEMA).write.format("delta").mode("append").save(
        tables.partitions.name
    )
    state = [tombstone_row(2, NOW + HOUR), tombstone_row(3, NOW - HOUR)]
    spark.createDataFrame(state, STATE_SCHEMA).write.format("delta").mode("append").save(
        tables.state.name
    )

    status = read_status(config, NOW, partial(SparkSql, spark))
    plans = Materializer(spark, config, tables, ManualClock(NOW)).plans()

    said = {(r["topic"], r["partition"]): r["due"] for r in status if r["due"]}
    done = {(p.topic, p.partition): ", ".join(p.reasons) for p in plans}
    assert said == done
    assert done == {
        ("t", 0): str(Reason.DIRTY_RATIO),
        ("t", 1): str(Reason.LOG_START),
        ("t", 2): str(Reason.HORIZON),
    }
