"""KIP-107 on the tables: move log start offsets forward; purge state and young rows below."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from segcompact.clock import at_ms
from segcompact.compaction.delete_records import Outcome, low_watermark
from segcompact.delta.merge_sql import BY_PARTITION, RowsMerge
from segcompact.spark.frames import local_rows
from segcompact.spark.tables import Tables

# A log start moved forward, never back.
_MOVED = RowsMerge(
    BY_PARTITION,
    update={"log_start_offset": "s.low", "updated_at": "s.now"},
    when="s.low > t.log_start_offset",
)


def delete_records(
    spark: SparkSession, tables: Tables, requests: dict[tuple[str, int], int], now_ms: int
) -> dict[tuple[str, int], Outcome]:
    """Apply ``{(topic, partition): offset}``; per partition the new low watermark or an error.

    Later merges drop input below the log start (``BatchMerger._above_log_start``) and the next
    materialisation is triggered by the move.
    """
    rows = tables.partitions.reader(spark).arrow(
        columns=["topic", "partition", "log_start_offset", "log_end_offset"]
    )
    known = {
        (r["topic"], r["partition"]): (r["log_start_offset"], r["log_end_offset"])
        for r in rows.to_pylist()
    }
    outcomes = {
        tp: low_watermark(*known.get(tp, (None, None)), offset) for tp, offset in requests.items()
    }
    moves = [
        (t, p, o.low_watermark)
        for (t, p), o in outcomes.items()
        if o.low_watermark is not None and o.low_watermark > known[(t, p)][0]
    ]
    if not moves:
        return outcomes
    source = local_rows(
        [(t, p, low, at_ms(now_ms)) for t, p, low in moves],
        "topic string, partition int, low long, now timestamp",
    )
    tables.partitions.merge_rows(spark, source, _MOVED)
    below: Column = reduce(
        lambda a, b: a | b,
        [
            (F.col("topic") == t) & (F.col("partition") == p) & (F.col("offset") < low)
            for t, p, low in moves
        ],
    )
    for table in (tables.state, tables.young):
        table.delta(spark).delete(below)
    return outcomes
