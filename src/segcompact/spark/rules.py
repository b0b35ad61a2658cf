"""What the merge needs of the compaction rules as Spark column expressions: a record's rank
and whether it is young.

Spark parses no header: the source's task classified every record (``compaction.rules``:
its version ``order_value``, ``tombstone``), and the tables store those columns. A rank is
built from the stored ones (version, timestamp, offset) under the topic's strategy now, so a
topic whose strategy changes ranks the rows it stored by the new one. Rules differ per topic,
so each expression is a ``CASE topic WHEN …`` over the topics of the micro-batch;
``tests/spark/test_rules_twins.py`` holds these to the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F

from segcompact.config import CompactionStrategy, TopicConfig


def per_topic(
    topic: Column,
    rules: Mapping[str, TopicConfig],
    build: Callable[[TopicConfig], Column],
    *,
    default: TopicConfig | None = None,
) -> Column:
    """``build(rules)`` for the row's topic; for a topic not in ``rules``, ``build(default)``,
    or null without a default."""
    expr: Column | None = None
    for name, r in sorted(rules.items()):
        expr = (F if expr is None else expr).when(topic == F.lit(name), build(r))
    if default is None:
        return expr if expr is not None else F.lit(None)
    return build(default) if expr is None else expr.otherwise(build(default))


def rank(offset: Column, timestamp: Column, order_value: Column, r: TopicConfig) -> Column:
    """The struct whose maximum wins under the topic's strategy, from a record's stored columns
    (as ``compaction.rules.ranks``, with the offset last)."""
    zero = F.lit(0).cast("long")
    if r.compaction_strategy is CompactionStrategy.TIMESTAMP:
        parts = (zero, F.unix_millis(timestamp), offset)
    elif r.compaction_strategy is CompactionStrategy.HEADER:
        has = order_value.isNotNull()
        parts = (
            F.when(has, 1).otherwise(0).cast("long"),
            F.coalesce(order_value, zero),
            offset,
        )
    else:
        parts = (zero, zero, offset)
    return F.struct(parts[0].alias("r1"), parts[1].alias("r2"), parts[2].alias("r3"))


def rank_by_topic(
    topic: Column,
    topics: Mapping[str, TopicConfig],
    *,
    table: str = "",
    default: TopicConfig | None = None,
) -> Column:
    """``rank`` of the row's record under its topic's strategy; ``table`` qualifies the record's
    columns (``"t."`` for a MERGE target)."""

    def of(r: TopicConfig) -> Column:
        return rank(
            F.col(f"{table}offset"), F.col(f"{table}timestamp"), F.col(f"{table}order_value"), r
        )

    return per_topic(topic, topics, of, default=default)


def young(timestamp: Column, now_ms: int, r: TopicConfig) -> Column:
    """True where a record is too young to be compacted (see ``rules.is_young``)."""
    if r.min_compaction_lag_ms <= 0:
        return F.lit(False)
    return timestamp > F.timestamp_millis(F.lit(now_ms - r.min_compaction_lag_ms))
