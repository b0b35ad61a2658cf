"""A Delta commit conflict with another writer (here a user's OPTIMIZE committed while a MERGE
read the files it compacted) is run again on the newer snapshot, not fatal."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from delta.exceptions import DeltaConcurrentModificationException
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from segcompact.spark.conflicts import retry_conflicts

pytestmark = pytest.mark.spark


def test_a_merge_a_concurrent_optimize_invalidated_is_run_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "table")
    spark.range(0, 100, numPartitions=4).withColumn("v", F.lit(0)).write.format("delta").save(path)
    # Named pipes hand the turn between the MERGE's source (in a Python worker, inside the MERGE's
    # transaction) and the OPTIMIZE (a driver thread): no sleep, no timing.
    reading, optimized, passed = tmp_path / "reading", tmp_path / "optimized", tmp_path / "passed"
    os.mkfifo(reading)
    os.mkfifo(optimized)

    def gate(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if not os.path.exists(passed):  # the first attempt only
            open(passed, "w").close()
            with open(reading, "w") as f:
                f.write("reading\n")
            with open(optimized) as f:
                f.read()
        yield from batches

    attempts = []

    def merge() -> None:
        attempts.append(len(attempts) + 1)
        source = spark.range(0, 100, numPartitions=1).withColumn("v", F.lit(1).cast("int"))
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(source.mapInArrow(gate, "id long, v int").alias("s"), "t.id = s.id")
            .whenMatchedUpdate(set={"v": "s.v"})
            .execute()
        )

    def optimize() -> None:
        with open(reading) as f:
            f.read()
        DeltaTable.forPath(spark, path).optimize().executeCompaction()
        with open(optimized, "w") as f:
            f.write("committed\n")

    user = threading.Thread(target=optimize)
    user.start()
    retry_conflicts(merge, "the test's MERGE")
    user.join()
    assert attempts == [1, 2]
    history = DeltaTable.forPath(spark, path).history().select("operation").collect()
    assert [r.operation for r in history][:2] == ["MERGE", "OPTIMIZE"]
    assert spark.read.format("delta").load(path).where("v = 1").count() == 100


def test_conflicts_past_the_attempts_are_raised() -> None:
    calls = []

    def always() -> None:
        calls.append(1)
        raise DeltaConcurrentModificationException("conflict")

    with pytest.raises(DeltaConcurrentModificationException):
        retry_conflicts(always, "step", attempts=3)
    assert len(calls) == 3
