"""``segcompact status`` and the materialiser read "due" from one decision, on the same table."""

from __future__ import annotations

from datetime import UTC, datetime
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

pytestmark = pytest.mark.spark

NOW = 1_700_000_000_000
HOUR = 3_600_000


def _ts(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def _partition(
    partition: int,
    *,
    dirty: int = 0,
    clean: int = 100,
    log_start: int = 0,
    materialized_log_start: int | None = 0,
    output_horizon: int | None = None,
    uncleanable: str | None = None,
) -> tuple[object, ...]:
    row = {
        "topic": "t",
        "partition": partition,
        "log_start_offset": log_start,
        "log_end_offset": 100,
        "first_dirty_timestamp": _ts(NOW - HOUR) if dirty else None,
        "first_dirty_appended_at": _ts(NOW - HOUR) if dirty else None,
        "dirty_bytes": dirty,
        "clean_bytes": clean,
        "segments": 1,
        "records": 100,
        "keyless_records": 0,
        "bad_version_headers": 0,
        "compression": 0,
        "last_materialized_at": _ts(NOW - 2 * HOUR),
        "materialized_version": 1,
        "materialized_log_start": materialized_log_start,
        "output_next_horizon": _ts(output_horizon),
        "uncleanable_reason": uncleanable,
        "updated_at": _ts(NOW),
        "erasure_from": None,
    }
    return tuple(row[f.name] for f in PARTITIONS_SCHEMA)


def _tombstone(partition: int, horizon: int) -> tuple[object, ...]:
    row = {
        "topic": "t",
        "partition": partition,
        "key": b"k",
        "offset": 5,
        "timestamp": _ts(NOW - HOUR),
        "timestampType": 0,
        "value": None,
        "headers": [],
        "order_value": None,
        "tombstone": True,
        "delete_horizon": _ts(horizon),
        "cleaned_at": _ts(NOW - HOUR),
    }
    return tuple(row[f.name] for f in STATE_SCHEMA)


def test_status_calls_due_exactly_what_the_materialiser_writes(
    spark: SparkSession, tmp_path: Path
) -> None:
    config = load_config(write_config(tmp_path, [tmp_path / "segments"]))
    tables = Tables.of(config)
    tables.ensure(spark)
    partitions = [
        _partition(0, dirty=100, clean=0),  # never compacted: dirty ratio 1
        _partition(1, log_start=40),  # KIP-107 moved the log start since the output was written
        # The output still shows a tombstone whose horizon passed; the state's is later.
        _partition(2, output_horizon=NOW - 1),
        # The state's tombstone expired, but the published output holds none.
        _partition(3),
        _partition(4, dirty=100, clean=0, uncleanable="00000.log: corrupt batch"),
        _partition(5),  # clean
    ]
    spark.createDataFrame(partitions, PARTITIONS_SCHEMA).write.format("delta").mode("append").save(
        tables.partitions.name
    )
    state = [_tombstone(2, NOW + HOUR), _tombstone(3, NOW - HOUR)]
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
