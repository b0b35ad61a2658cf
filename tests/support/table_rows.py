"""Rows of the partitions and state tables as tests build them by hand: a partition's numbers
and a tombstone, at a fixed time."""

from __future__ import annotations

from datetime import UTC, datetime

from segcompact.spark.tables import PARTITIONS_SCHEMA, STATE_SCHEMA

NOW = 1_700_000_000_000
HOUR = 3_600_000


def ts(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def partition_row(
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
        "first_dirty_timestamp": ts(NOW - HOUR) if dirty else None,
        "first_dirty_appended_at": ts(NOW - HOUR) if dirty else None,
        "dirty_bytes": dirty,
        "clean_bytes": clean,
        "segments": 1,
        "records": 100,
        "keyless_records": 0,
        "bad_version_headers": 0,
        "compression": 0,
        "last_materialized_at": ts(NOW - 2 * HOUR),
        "materialized_version": 1,
        "materialized_log_start": materialized_log_start,
        "output_next_horizon": ts(output_horizon),
        "uncleanable_reason": uncleanable,
        "updated_at": ts(NOW),
        "erasure_from": None,
    }
    return tuple(row[f.name] for f in PARTITIONS_SCHEMA)


def tombstone_row(partition: int, horizon: int) -> tuple[object, ...]:
    row = {
        "topic": "t",
        "partition": partition,
        "key": b"k",
        "offset": 5,
        "timestamp": ts(NOW - HOUR),
        "timestampType": 0,
        "value": None,
        "headers": [],
        "order_value": None,
        "tombstone": True,
        "delete_horizon": ts(horizon),
        "cleaned_at": ts(NOW - HOUR),
    }
    return tuple(row[f.name] for f in STATE_SCHEMA)
