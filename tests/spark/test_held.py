"""A DataFrame held for a micro-batch is computed once, whatever reads it, until released; sized,
a join broadcasts it as it would a cache of that size."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

from segcompact.spark.held import hold, release, sized
from segcompact.spark.tables import session_settings

pytestmark = pytest.mark.spark


def _kept(spark: SparkSession, df: DataFrame) -> bool:
    rdd = df._jdf.queryExecution().analyzed().rdd()
    return bool(spark.sparkContext._jsc.sc().getPersistentRDDs().contains(rdd.id()))  # type: ignore[union-attr]


def test_a_held_dataframe_is_computed_once_and_freed_on_release(spark: SparkSession) -> None:
    computed = spark.sparkContext.accumulator(0)

    def tally(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            computed.add(b.num_rows)
            yield b

    df = hold(spark.range(0, 1000, numPartitions=2).mapInArrow(tally, "id long"))
    assert computed.value == 0  # nothing before a job reads it
    assert df.count() == 1000
    assert df.where("id % 2 = 0").count() == 500
    assert sorted(r.id for r in df.where("id >= 998").collect()) == [998, 999]
    assert computed.value == 1000  # three jobs, every row computed once
    assert _kept(spark, df)
    release(df)
    assert not _kept(spark, df)
    release(df)  # twice: nothing more to free


def test_a_sized_held_dataframe_is_broadcast_only_when_small(spark: SparkSession) -> None:
    def rows() -> DataFrame:  # of no size the planner knows, as the source's; in this session
        return spark.createDataFrame(
            spark.sparkContext.parallelize([(i,) for i in range(1000)], 2), "k long"
        )

    left, right = hold(rows()), hold(rows())

    def plan(df: DataFrame) -> str:
        return str(left.join(df, "k")._jdf.queryExecution().executedPlan().toString())

    try:
        # Held, neither side has a size the planner knows: no broadcast.
        assert "SortMergeJoin" in plan(right)
        assert "SortMergeJoin" in plan(sized(right, 1 << 40))  # larger than the threshold
        small = plan(sized(right, 8_000))
        assert "BroadcastHashJoin" in small and "BuildRight" in small
        with session_settings(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
            assert "SortMergeJoin" in plan(sized(right, 8_000))  # broadcasting turned off
    finally:
        release(left)
        release(right)
