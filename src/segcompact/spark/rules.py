"""The compaction rules of ``segcompact.compaction.rules`` as Spark column expressions.

Rules differ per topic, so each expression is a ``CASE topic WHEN …`` over the topics of the
micro-batch; the tests hold these to the pure definitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from segcompact.compaction.rules import TOMBSTONE_TRUE
from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig
from segcompact.format.attributes import RecordAttr

_TWO_63 = Decimal(2**63)
_TWO_64 = Decimal(2**64)


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


def last_header_value(headers: Column, name: str) -> tuple[Column, Column]:
    """``(present, value)`` of the last header called ``name``."""
    last = F.try_element_at(F.filter(headers, lambda h: h["key"] == F.lit(name)), F.lit(-1))
    return last.isNotNull(), last["value"]


def signed_long(value: Column) -> Column:
    """An 8-byte big-endian binary as a signed long."""
    unsigned = F.conv(F.hex(value), 16, 10).cast("decimal(20,0)")
    return (
        F.when(unsigned >= F.lit(_TWO_63), unsigned - F.lit(_TWO_64))
        .otherwise(unsigned)
        .cast("long")
    )


def version(headers: Column, r: TopicConfig) -> Column:
    """The header-strategy version: null unless the header's last value has 8 bytes."""
    if r.compaction_strategy is not CompactionStrategy.HEADER or r.strategy_header is None:
        return F.lit(None).cast("long")
    _, value = last_header_value(headers, r.strategy_header)
    return F.when(F.length(value) == 8, signed_long(value)).cast("long")


def bad_version(headers: Column, r: TopicConfig) -> Column:
    """True where the version header is present but not an 8-byte value (it counts as absent)."""
    if r.compaction_strategy is not CompactionStrategy.HEADER or r.strategy_header is None:
        return F.lit(False)
    present, value = last_header_value(headers, r.strategy_header)
    return present & F.coalesce(F.length(value) != 8, F.lit(True))


def rank(offset: Column, timestamp: Column, order_value: Column, r: TopicConfig) -> Column:
    """The struct whose maximum wins under the topic's strategy (see ``order_key``)."""
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


def tombstone(value: Column, headers: Column, attributes: Column, r: TopicConfig) -> Column:
    if r.tombstone_mode is TombstoneMode.HEADER:
        present, flag = last_header_value(headers, r.tombstone_header)
        return present & F.coalesce(flag.isin([F.lit(v) for v in TOMBSTONE_TRUE]), F.lit(False))
    if r.tombstone_mode is TombstoneMode.ATTRIBUTE:
        bit = int(RecordAttr.TOMBSTONE)
        return attributes.cast("int").bitwiseAND(bit) == bit
    return value.isNull()


def young(timestamp: Column, now_ms: int, r: TopicConfig) -> Column:
    """True where a record is too young to be compacted (see ``rules.is_young``)."""
    if r.min_compaction_lag_ms <= 0:
        return F.lit(False)
    return timestamp > F.timestamp_millis(F.lit(now_ms - r.min_compaction_lag_ms))


def classify(
    records: DataFrame, topics: Mapping[str, TopicConfig], default: TopicConfig | None = None
) -> DataFrame:
    """``records`` with each one's header version (``order_value``), whether that header was
    unreadable (``bad_version``), and whether it is a tombstone, under its topic's settings
    (``default``'s for a topic not in ``topics``)."""
    headers, topic = F.col("headers"), F.col("topic")

    def by_topic(build: Callable[[TopicConfig], Column]) -> Column:
        return per_topic(topic, topics, build, default=default)

    return (
        records.withColumn("order_value", by_topic(lambda c: version(headers, c)))
        .withColumn("bad_version", by_topic(lambda c: bad_version(headers, c)))
        .withColumn(
            "tombstone",
            by_topic(lambda c: tombstone(F.col("value"), headers, F.col("attributes"), c)),
        )
    )
