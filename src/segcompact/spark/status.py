"""``segcompact status``: per partition, what the tables say about its compaction."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from segcompact.compaction.triggers import PartitionStats, decide
from segcompact.config import CompactorConfig
from segcompact.spark.merge import Tables


def partition_status(
    spark: SparkSession, config: CompactorConfig, tables: Tables, now_ms: int
) -> list[dict[str, Any]]:
    """One dict per (topic, partition), sorted; times in epoch milliseconds."""
    state = (
        tables.state.read(spark)
        .groupBy("topic", "partition")
        .agg(
            F.count("*").alias("keys"),
            F.count(F.when(F.col("tombstone"), 1)).alias("tombstones_pending"),
            F.min("delete_horizon").alias("next_horizon"),
        )
    )
    young = (
        tables.young.read(spark)
        .groupBy("topic", "partition")
        .agg(F.count("*").alias("young_records"))
    )
    rows = (
        tables.partitions.read(spark)
        .join(state, ["topic", "partition"], "left")
        .join(young, ["topic", "partition"], "left")
        .orderBy("topic", "partition")
        .collect()
    )
    out = []
    for r in rows:
        first_dirty = _ms(r.first_dirty_timestamp)
        next_horizon = _ms(r.next_horizon)
        decision = decide(
            PartitionStats(r.dirty_bytes, r.clean_bytes, first_dirty, next_horizon),
            config.topic(r.topic),
            now_ms,
        )
        out.append(
            {
                "topic": r.topic,
                "partition": r.partition,
                "log_start_offset": r.log_start_offset,
                "log_end_offset": r.log_end_offset,
                "records": r.records,
                "keys": r.keys or 0,
                "dirty_bytes": r.dirty_bytes,
                "clean_bytes": r.clean_bytes,
                "dirty_ratio": round(decision.dirty_ratio, 4),
                # Kafka's max-compaction-delay-secs, in ms: how far past max.compaction.lag.ms.
                "max_compaction_delay_ms": decision.compaction_delay_ms,
                "due": ", ".join(decision.reasons) or None,
                "tombstones_pending": r.tombstones_pending or 0,
                # Records kept raw, younger than min.compaction.lag.ms or after one that is.
                "young_records": r.young_records or 0,
                "next_horizon_ms": next_horizon,
                "keyless_records": r.keyless_records,
                "last_materialized_ms": _ms(r.last_materialized_at),
                "uncleanable": r.uncleanable_reason,
            }
        )
    return out


def _ms(value: Any) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)
