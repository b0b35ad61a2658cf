"""KIP-107 on the tables: move log start offsets forward; purge state and young rows below."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from segcompact.compaction.delete_records import Outcome, low_watermark
from segcompact.spark.frames import local_frame
from segcompact.spark.tables import SOURCE_AS_IS, Tables, session_settings


def delete_records(
    spark: SparkSession, tables: Tables, requests: dict[tuple[str, int], int], now_ms: int
) -> dict[tuple[str, int], Outcome]:
    """Apply ``{(topic, partition): offset}``; per partition the new low watermark or an error.

    Later merges drop input below the log start (``BatchMerger._above_log_start``) and the next
    materialisation is triggered by the move.
    """
    known = {
        (r.topic, r.partition): (r.log_start_offset, r.log_end_offset)
        for r in tables.partitions.read(spark).collect()
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
    source = local_frame(spark, moves, "topic string, partition int, low long")
    with session_settings(spark, SOURCE_AS_IS):  # local rows: nothing to copy
        (
            tables.partitions.delta(spark)
            .alias("t")
            .merge(source.alias("s"), "t.topic = s.topic AND t.partition = s.partition")
            .whenMatchedUpdate(
                condition="s.low > t.log_start_offset",
                set={
                    "log_start_offset": F.col("s.low"),
                    "updated_at": F.timestamp_millis(F.lit(now_ms)),
                },
            )
            .execute()
        )
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
