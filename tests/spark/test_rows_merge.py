"""The partitions table's MERGEs of a few driver-held rows (``delta.merge_sql``): delta-rs and
Spark, which each MERGE's SQL is given to, leave the same rows, and each honours the
idempotent-write pair the other committed.

Real Spark and Delta on a local master, real delta-rs. Spark takes a MERGE where delta-rs
declines it (an object store, a protocol it cannot write): here ``NativeReader.merge`` is made
to decline.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from segcompact.delta.native import NativeReader
from segcompact.spark.partitions import mark_erasure, merge_batch_stats
from segcompact.spark.tables import PARTITIONS_SCHEMA, Table
from tests.support.table_rows import HOUR, NOW, ts

pytestmark = pytest.mark.spark

_TIMES = st.one_of(st.none(), st.integers(NOW - 3 * HOUR, NOW + HOUR).map(ts))


@st.composite
def _stats(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One batch's numbers for some of partitions 0 to 2 of topic t."""
    partitions = draw(st.sets(st.integers(0, 2), min_size=1))
    return [
        {
            "topic": "t",
            "partition": p,
            "log_end_offset": draw(st.integers(0, 1000)),
            "dirty_bytes": draw(st.integers(0, 10**6)),
            "segments": draw(st.integers(0, 3)),
            "records": draw(st.integers(0, 100)),
            "first_dirty_timestamp": draw(_TIMES),
            "uncleanable_reason": draw(st.sampled_from([None, None, "bad crc", "odd name"])),
            "compression": draw(st.sampled_from([None, 0, 1, 3])),
            "keyless_records": draw(st.integers(0, 5)),
            "bad_version_headers": draw(st.integers(0, 5)),
        }
        for p in sorted(partitions)
    ]


# A step: a batch's numbers at a time, with or without a deletion SLA on its topic, or
# graduated records' earliest times marking the erasure clock.
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("batch"), _stats(), st.integers(0, HOUR), st.booleans()),
        st.tuples(
            st.just("mark"),
            st.dictionaries(st.integers(0, 2), _TIMES, min_size=1),
            st.integers(0, HOUR),
            st.just(False),
        ),
    ),
    min_size=1,
    max_size=4,
)


def _apply(spark: SparkSession, table: Table, steps: list[tuple[Any, ...]]) -> list[tuple]:
    known: set[int] = set()
    for version, (kind, what, later, erased) in enumerate(steps):
        now = NOW + later
        if kind == "batch":
            batch = {r["partition"] for r in what}
            merge_batch_stats(
                spark,
                table,
                what,
                now,
                ["t"] if erased else [],
                write=("test-partitions", version),
                new=not batch & known,
            )
            known |= batch
        else:
            frame = spark.createDataFrame(
                [("t", p, at) for p, at in sorted(what.items())],
                "topic string, partition int, appended_at timestamp",
            )
            mark_erasure(spark, table, frame, now)
    rows = table.reader(spark).arrow().to_pylist()
    return sorted(tuple(r[f.name] for f in PARTITIONS_SCHEMA) for r in rows)


@settings(max_examples=4, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_delta_rs_and_spark_merge_the_partitions_numbers_alike(
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    steps: list[tuple[Any, ...]],
) -> None:
    folder = tmp_path_factory.mktemp("rows-merge")
    native = Table(str(folder / "native"), PARTITIONS_SCHEMA)
    by_spark = Table(str(folder / "spark"), PARTITIONS_SCHEMA)
    for t in (native, by_spark):
        t.ensure(spark)
    expected = _apply(spark, native, steps)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(NativeReader, "merge", lambda *_: False)
        assert _apply(spark, by_spark, steps) == expected
    # Each table was written by the engine it was meant for (version 0 is its creation).
    assert _engines(native) <= {"delta-rs"}
    assert _engines(by_spark) <= {"Apache-Spark"}


def _engines(table: Table) -> set[str]:
    return {
        str(h["engineInfo"]).split(":")[0].split("/")[0]
        for h in DeltaTable(table.name).history()
        if h["version"] > 0
    }


def test_each_engine_skips_a_write_the_other_committed(spark: SparkSession, tmp_path: Path) -> None:
    table = Table(str(tmp_path / "partitions"), PARTITIONS_SCHEMA)
    table.ensure(spark)
    first = datetime(2026, 1, 1, tzinfo=UTC)
    batch = [
        {
            "topic": "t",
            "partition": 0,
            "log_end_offset": 10,
            "dirty_bytes": 100,
            "segments": 1,
            "records": 10,
            "first_dirty_timestamp": first,
            "uncleanable_reason": None,
            "compression": 3,
            "keyless_records": 0,
            "bad_version_headers": 0,
        }
    ]

    def dirty() -> int:
        (row,) = table.reader(spark).arrow(columns=["dirty_bytes"]).to_pylist()
        return int(row["dirty_bytes"])

    merge_batch_stats(spark, table, batch, NOW, write=("app", 0), new=True)  # delta-rs
    with pytest.MonkeyPatch.context() as m:
        m.setattr(NativeReader, "merge", lambda *_: False)
        merge_batch_stats(spark, table, batch, NOW, write=("app", 0))  # Spark: a replay
        assert dirty() == 100
        merge_batch_stats(spark, table, batch, NOW, write=("app", 1))  # Spark: the next
        assert dirty() == 200
    merge_batch_stats(spark, table, batch, NOW, write=("app", 1))  # delta-rs: a replay
    assert dirty() == 200
    merge_batch_stats(spark, table, batch, NOW, write=("app", 2))
    assert dirty() == 300
    # delta-rs's files hold strings as string views: a read filtered by topic still works.
    for topic, rows in (("t", 1), ("u", 0), ("t" * 249, 0)):
        assert table.reader(spark).arrow(where=pc.field("topic") == topic).num_rows == rows
