"""Spark's side of the rules, held to the model's scalar oracle (``tests/support/model.py``):
the rank it builds from stored columns, youth, and the rules' columns the source's task emits
(``compaction/rules.py``, the rules' one home; ``tests/unit/test_rules.py`` holds it to the
oracle record by record). The model and the job must never disagree on a record."""

from __future__ import annotations

import itertools
import random
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from segcompact.compaction.rules import Rankings, is_young
from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig, load_config
from segcompact.samples import generate_partition
from segcompact.spark import rules as twin
from segcompact.spark.source import register
from segcompact.storage import LocalInputFile
from tests.support import config as support_config
from tests.support.model import header_version, is_tombstone, order_key, read_log_records

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

TOPICS = {
    "by-offset": TopicConfig(),
    "by-time": TopicConfig(compaction_strategy=CompactionStrategy.TIMESTAMP),
    "by-version": TopicConfig(compaction_strategy=CompactionStrategy.HEADER, strategy_header=V),
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


def _version(headers: tuple[Header, ...], config: TopicConfig) -> int | None:
    """The version the source's task stores (``order_value``), by the oracle."""
    if config.compaction_strategy is not CompactionStrategy.HEADER:
        return None
    return header_version(headers, config.strategy_header)


def _stored(spark: SparkSession, topic: str, records: list[Rec], config: TopicConfig) -> Any:
    """The records as a table stores them: with the version the task computed."""
    rows = _rows(topic, records)
    rows = [(*row, _version(r.headers, config)) for row, r in zip(rows, records, strict=True)]
    return spark.createDataFrame(rows, f"{_SCHEMA}, order_value long")


def _evaluate(spark: SparkSession, topic: str, records: list[Rec], expr: Column) -> list[Any]:
    """``expr`` on each record, in the records' order (offsets must be distinct)."""
    df = spark.createDataFrame(_rows(topic, records), _SCHEMA)
    rows = df.select("offset", expr.alias("out")).orderBy("offset").collect()
    return [r.out for r in rows]


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
    ranked = _stored(spark, topic, records, config).select(
        "offset",
        twin.rank(F.col("offset"), F.col("timestamp"), F.col("order_value"), config).alias("rank"),
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
        r.offset: order_key(
            config.compaction_strategy, r.offset, r.timestamp, _version(r.headers, config)
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
        df = _stored(spark, topic, records, named.get(topic, default))
        target = df.select(F.struct(*[F.col(c) for c in df.columns]).alias("t"), "topic")
        direct = df.select(twin.rank_by_topic(F.col("topic"), named, default=default))
        qualified = target.select(
            twin.rank_by_topic(F.col("topic"), named, table="t.", default=default)
        )
        config = named.get(topic, default)
        expected = [twin.rank(F.col("offset"), F.col("timestamp"), F.col("order_value"), config)]
        assert direct.collect() == qualified.collect() == df.select(*expected).collect()


@pytest.mark.parametrize("topic", ["lagged", "by-offset"])
def test_young(spark: SparkSession, topic: str) -> None:
    config = TOPICS[topic]
    lag = config.min_compaction_lag_ms
    stamps = [NOW - 5_000, NOW - lag - 1, NOW - lag, NOW - lag + 1, NOW, NOW + 10_000]
    records = [Rec(i, timestamp=ts) for i, ts in enumerate(stamps)]
    got = _evaluate(spark, topic, records, twin.young(F.col("timestamp"), NOW, config))
    expected = [is_young(r.timestamp, NOW, lag) for r in records]
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


def test_the_source_emits_each_records_rule_columns_as_the_model_computes_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A real batch of every strategy and tombstone mode (and a lagged topic, whose records all
    leave their task): every record the ``kafka-segments`` source emits under the
    ``compaction`` option carries the version, unreadable-version flag and tombstone flag the
    model gives it (a marker: none, false, false)."""
    register(spark)
    topics: dict[str, dict[str, object]] = {
        f"{s.value}-{m.value}": {
            "compaction.strategy": s.value,
            "compaction.tombstone.mode": m.value,
            **({"compaction.strategy.header": V} if s is CompactionStrategy.HEADER else {}),
        }
        for s in CompactionStrategy
        for m in TombstoneMode
    }
    topics["lagged"] = {"min.compaction.lag.ms": 1_000, "compaction.tombstone.mode": "header"}
    config = load_config(support_config.write_config(tmp_path, [tmp_path / "in"], topics=topics))
    rnd = random.Random(32)
    records = {}
    for name in topics:
        for seg in generate_partition(rnd, records=60, transactions=True):
            path = seg.write(tmp_path / "in" / f"{name}-0")
            records.update(
                {(name, r.offset): r for r in read_log_records(LocalInputFile(path), name, 0)}
            )
    emitted = (
        spark.read.format("kafka-segments")
        .option("rolledOnly", "false")
        .option("compaction", Rankings.of(config).to_json())
        .load(str(tmp_path / "in"))
        .where(~F.col("segment_end"))
        .select("topic", "offset", "order_value", "bad_version", "tombstone")
        .collect()
    )
    got = {(r.topic, r.offset): (r.order_value, r.bad_version, r.tombstone) for r in emitted}
    expected = {}
    for (name, offset), r in records.items():
        rules = config.topic(name)
        if r.is_control:
            expected[(name, offset)] = (None, False, False)
            continue
        version = _version(r.headers, rules)
        header = rules.compaction_strategy is CompactionStrategy.HEADER
        present = any(k == rules.strategy_header for k, _ in r.headers)
        tombstone = is_tombstone(rules, r.value, r.headers, r.attributes)
        expected[(name, offset)] = (version, header and present and version is None, tombstone)
    assert len(got) == len(emitted) and got.keys() <= expected.keys()
    assert got == {k: expected[k] for k in got}
    assert {k for k in expected if k[0] == "lagged"} <= got.keys()  # lagged: every record
    for name in topics:  # every mode and strategy met deletes and live records
        assert {v[2] for k, v in got.items() if k[0] == name} == {True, False}, name
    values = list(got.values())
    assert any(v[0] is not None for v in values) and any(v[1] for v in values)
    assert any(r.is_control for k, r in records.items() if k in got)
