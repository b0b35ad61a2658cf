"""A DataFrame of the driver's rows is planned as a local relation: the same rows and types as
``createDataFrame`` of the list gives, and no Spark job or Python worker to read them."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from segcompact.spark.frames import local_frame
from segcompact.spark.tables import STATE_SCHEMA

pytestmark = pytest.mark.spark

DDL = "topic string, partition int, low long, at timestamp, done boolean"
ROWS = [
    ("t", 0, 5, dt.datetime(2026, 11, 26, 12, 30, 1, 250000), True),
    ("t", 1, None, None, None),
    ("ü", -1, 2**62, dt.datetime(1970, 1, 1, tzinfo=dt.UTC), False),
]


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().analyzed().getClass().getSimpleName())


def test_rows_come_back_as_the_pickled_path_gives_them_from_a_local_relation(
    spark: SparkSession,
) -> None:
    frame = local_frame(spark, ROWS, DDL)
    pickled = spark.createDataFrame(ROWS, DDL)
    assert _plan(frame) == "LocalRelation"
    assert _plan(pickled) != "LocalRelation"
    assert frame._jdf.schema().json() == pickled._jdf.schema().json()  # as the JVM has them
    assert frame.collect() == pickled.collect()
    # The instants are the same too, whatever the Python process's time zone.
    millis = "unix_millis(at) AS ms"
    assert frame.selectExpr(millis).collect() == pickled.selectExpr(millis).collect()


def _jobs_to_collect(spark: SparkSession, df: DataFrame, group: str) -> int:
    spark.sparkContext.setJobGroup(group, group)
    try:
        df.collect()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_reading_it_runs_no_spark_job(spark: SparkSession) -> None:
    assert _jobs_to_collect(spark, local_frame(spark, ROWS, DDL), "local-frame") == 0
    assert _jobs_to_collect(spark, spark.createDataFrame(ROWS, DDL), "pickled-list") >= 1


def test_an_empty_frame_keeps_a_nested_schema(spark: SparkSession) -> None:
    frame = local_frame(spark, [], STATE_SCHEMA)
    # As the JVM has it (``frame.schema`` would answer the struct given, whatever Spark made).
    assert T.StructType.fromJson(json.loads(frame._jdf.schema().json())) == STATE_SCHEMA
    assert frame.count() == 0


def test_a_row_of_the_wrong_width_or_a_number_for_a_time_is_refused(spark: SparkSession) -> None:
    with pytest.raises(ValueError, match="a row of 2 values for 5 columns"):
        local_frame(spark, [("t", 0)], DDL)
    with pytest.raises(TypeError, match="a timestamp column takes a datetime, not int 5"):
        local_frame(spark, [("t", 0, 1, 5, True)], DDL)
