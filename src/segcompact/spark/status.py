"""``segcompact status``: per partition, what the tables say about its compaction."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from segcompact.clock import epoch_ms
from segcompact.config import CompactorConfig
from segcompact.spark.partitions import decision
from segcompact.spark.tables import Tables


def partition_status(
    spark: SparkSession, config: CompactorConfig, tables: Tables, now_ms: int
) -> list[dict[str, Any]]:
    """One dict per (topic, partition), sorted; times in epoch milliseconds. ``due`` is the
    materialiser's own decision (``partitions.decision``)."""
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
        due = decision(r.asDict(), config, now_ms)
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
                "dirty_ratio": round(due.dirty_ratio, 4),
                # Kafka's max-compaction-delay-secs, in ms: how far past max.compaction.lag.ms.
                "max_compaction_delay_ms": due.compaction_delay_ms,
                "due": ", ".join(due.reasons) or None,
                "tombstones_pending": r.tombstones_pending or 0,
                # Records kept raw, younger than min.compaction.lag.ms or after one that is.
                "young_records": r.young_records or 0,
                # When the state's next tombstone expires (the output's may differ: see due).
                "next_horizon_ms": epoch_ms(r.next_horizon),
                "keyless_records": r.keyless_records,
                "last_materialized_ms": epoch_ms(r.last_materialized_at),
                "uncleanable": r.uncleanable_reason,
            }
        )
    return out
