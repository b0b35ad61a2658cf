"""Each compaction rule of ``compaction/rules.py`` against its column-expression twin in
``spark/rules.py``, on the same inputs: the model and the job must never disagree on a record."""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from segcompact.compaction import rules as pure
from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig
from segcompact.format.attributes import RecordAttr
from segcompact.spark import rules as twin

pytestmark = pytest.mark.spark

Header = tuple[str, bytes | None]
V = "v"  # the version header
NOW = 1_700_000_000_000


def _long(n: int) -> bytes:
    return struct.pack(">q", n)


@dataclass(frozen=True)
class Rec:
    offset: int
    timestamp: int = 0
    value: bytes | None = b"x"
    headers: tuple[Header, ...] = ()
    attributes: int = 0


# Version headers: absent, good (incl. negative, and the largest), and every bad length.
VERSION_HEADERS: list[tuple[Header, ...]] = [
    (),
    ((V, _long(5)),),
    ((V, _long(-3)),),
    ((V, _long(2**63 - 1)),),
    ((V, _long(-(2**63))),),
    ((V, b""),),
    ((V, b"\x00" * 7),),
    ((V, b"\x00" * 9),),
    ((V, None),),
    ((V, _long(1)), (V, _long(9))),  # the last one counts
    ((V, _long(9)), (V, b"bad")),  # ... even when it is bad
    (("other", _long(7)),),
]

# Tombstone headers: every value the header mode may see.
TOMBSTONE_HEADERS: list[tuple[Header, ...]] = [
    (),
    (("tombstone", b"true"),),
    (("tombstone", b"1"),),
    (("tombstone", b"\x01"),),
    (("tombstone", b"no"),),
    (("tombstone", b"TRUE"),),
    (("tombstone", None),),
    (("tombstone", b"true"), ("tombstone", b"no")),  # last wins
    (("tombstone", b"no"), ("tombstone", b"1")),
    (("deleted", b"true"),),
]

TOPICS = {
    "by-offset": TopicConfig(),
    "by-time": TopicConfig(compaction_strategy=CompactionStrategy.TIMESTAMP),
    "by-version": TopicConfig(compaction_strategy=CompactionStrategy.HEADER, strategy_header=V),
    "null": TopicConfig(tombstone_mode=TombstoneMode.NULL_VALUE),
    "flag-header": TopicConfig(tombstone_mode=TombstoneMode.HEADER, tombstone_header="tombstone"),
    "flag-attribute": TopicConfig(tombstone_mode=TombstoneMode.ATTRIBUTE),
    "lagged": TopicConfig(min_compaction_lag_ms=1_000),
}

_SCHEMA = (
    "topic string, offset long, timestamp timestamp, value binary, "
    "headers array<struct<key: string, value: binary>>, attributes tinyint"
)


def _rows(topic: str, records: list[Rec]) -> list[tuple[object, ...]]:
    return [
        (
            topic,
            r.offset,
            datetime.fromtimestamp(r.timestamp / 1000, UTC),
            r.value,
            [{"key": k, "value": v} for k, v in r.headers],
            r.attributes,
        )
        for r in records
    ]


def _evaluate(spark: SparkSession, topic: str, records: list[Rec], expr: Column) -> list[Any]:
    """``expr`` on each record, in the records' order (offsets must be distinct)."""
    df = spark.createDataFrame(_rows(topic, records), _SCHEMA)
    rows = df.select("offset", expr.alias("out")).orderBy("offset").collect()
    return [r.out for r in rows]


def _version_records() -> list[Rec]:
    return [Rec(i, headers=h) for i, h in enumerate(VERSION_HEADERS)]


def test_header_version_and_bad_version(spark: SparkSession) -> None:
    config = TOPICS["by-version"]
    records = _version_records()
    headers = F.col("headers")
    got = _evaluate(
        spark,
        "by-version",
        records,
        F.struct(twin.version(headers, config), twin.bad_version(headers, config)),
    )
    expected = []
    for r in records:
        version = pure.header_version(r.headers, V)
        present = any(k == V for k, _ in r.headers)
        expected.append((version, present and version is None))  # as the model counts it
    assert [tuple(g) for g in got] == expected


@pytest.mark.parametrize("topic", ["by-offset", "by-time"])
def test_version_is_null_unless_the_strategy_is_header(spark: SparkSession, topic: str) -> None:
    headers = F.col("headers")
    config = TOPICS[topic]
    got = _evaluate(
        spark,
        topic,
        _version_records(),
        F.struct(twin.version(headers, config), twin.bad_version(headers, config)),
    )
    assert {tuple(g) for g in got} == {(None, False)}


def _ranking_records() -> list[Rec]:
    """Ties on every part of the order: equal timestamps, equal versions, with and without."""
    out = []
    for i, (ts, h) in enumerate(
        itertools.product([0, 5_000, 5_000, -1_000], [*VERSION_HEADERS[:5], VERSION_HEADERS[6]])
    ):
        out.append(Rec(10 + i, timestamp=ts, headers=h))
    return out


@pytest.mark.parametrize("topic", ["by-offset", "by-time", "by-version"])
def test_rank_orders_records_as_order_key_does(spark: SparkSession, topic: str) -> None:
    """Spark compares the rank structs, as the job's ``max_by`` and MERGE condition do."""
    config = TOPICS[topic]
    records = _ranking_records()
    version = twin.version(F.col("headers"), config)
    ranked = spark.createDataFrame(_rows(topic, records), _SCHEMA).select(
        "offset", twin.rank(F.col("offset"), F.col("timestamp"), version, config).alias("rank")
    )
    a, b = ranked.alias("a"), ranked.alias("b")
    pairs = a.crossJoin(b).select(
        F.col("a.offset").alias("a"),
        F.col("b.offset").alias("b"),
        (F.col("a.rank") < F.col("b.rank")).alias("lt"),
        (F.col("a.rank") == F.col("b.rank")).alias("eq"),
    )
    got = {(r["a"], r["b"]): (r["lt"], r["eq"]) for r in pairs.collect()}
    key = {
        r.offset: pure.order_key(
            config.compaction_strategy,
            r.offset,
            r.timestamp,
            pure.header_version(r.headers, config.strategy_header),
        )
        for r in records
    }
    assert got == {(x, y): (key[x] < key[y], key[x] == key[y]) for x in key for y in key}
    winner = ranked.agg(F.max_by("offset", "rank")).first()
    assert winner is not None and winner[0] == max(key, key=key.__getitem__)


def test_rank_by_topic_picks_each_topics_strategy(spark: SparkSession) -> None:
    """Per topic, with a default for topics not named, and a MERGE target's qualified columns."""
    named = {t: TOPICS[t] for t in ("by-time", "by-version")}
    default = TOPICS["by-offset"]
    records = _ranking_records()
    for topic in ("by-time", "by-version", "unnamed"):
        df = spark.createDataFrame(_rows(topic, records), _SCHEMA).withColumn(
            "order_value", twin.version(F.col("headers"), named.get(topic, default))
        )
        target = df.select(F.struct(*[F.col(c) for c in df.columns]).alias("t"), "topic")
        direct = df.select(twin.rank_by_topic(F.col("topic"), named, default=default))
        qualified = target.select(
            twin.rank_by_topic(F.col("topic"), named, table="t.", default=default)
        )
        config = named.get(topic, default)
        expected = [twin.rank(F.col("offset"), F.col("timestamp"), F.col("order_value"), config)]
        assert direct.collect() == qualified.collect() == df.select(*expected).collect()


@pytest.mark.parametrize("topic", ["null", "flag-header", "flag-attribute"])
def test_tombstone(spark: SparkSession, topic: str) -> None:
    config = TOPICS[topic]
    bit = int(RecordAttr.TOMBSTONE)
    records = [
        Rec(i, value=value, headers=h, attributes=attributes)
        for i, (value, h, attributes) in enumerate(
            itertools.product([b"x", b"", None], TOMBSTONE_HEADERS, [0, bit, 0x7E, 0x7F])
        )
    ]
    got = _evaluate(
        spark,
        topic,
        records,
        twin.tombstone(F.col("value"), F.col("headers"), F.col("attributes"), config),
    )
    expected = [pure.is_tombstone(config, r.value, r.headers, r.attributes) for r in records]
    assert got == expected
    assert any(expected) and not all(expected)


@pytest.mark.parametrize("topic", ["lagged", "by-offset"])
def test_young(spark: SparkSession, topic: str) -> None:
    config = TOPICS[topic]
    lag = config.min_compaction_lag_ms
    stamps = [NOW - 5_000, NOW - lag - 1, NOW - lag, NOW - lag + 1, NOW, NOW + 10_000]
    records = [Rec(i, timestamp=ts) for i, ts in enumerate(stamps)]
    got = _evaluate(spark, topic, records, twin.young(F.col("timestamp"), NOW, config))
    expected = [pure.is_young(r.timestamp, NOW, lag) for r in records]
    assert got == expected
    assert any(expected) == (lag > 0)


def test_per_topic_falls_back_to_the_default_or_null(spark: SparkSession) -> None:
    named = {"a": TopicConfig(delete_retention_ms=1), "b": TopicConfig(delete_retention_ms=2)}

    def retention(c: TopicConfig) -> Column:
        return F.lit(c.delete_retention_ms)

    df = spark.createDataFrame([("a",), ("b",), ("c",)], "topic string")
    with_default = twin.per_topic(
        F.col("topic"), named, retention, default=TopicConfig(delete_retention_ms=3)
    )
    without = twin.per_topic(F.col("topic"), named, retention)
    rows = df.select("topic", with_default.alias("d"), without.alias("n")).orderBy("topic")
    assert [tuple(r) for r in rows.collect()] == [("a", 1, 1), ("b", 2, 2), ("c", 3, None)]
