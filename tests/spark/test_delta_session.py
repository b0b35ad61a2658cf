"""The session factory gives a working Delta Lake and runs Python workers on this interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyspark
import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import udf
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)
from pyspark.testing import assertDataFrameEqual

from segcompact.errors import SegcompactError
from segcompact.spark.session import JARS_DIR_ENV, find_delta_jars
from segcompact.spark.spark_home import unzipped_home

pytestmark = pytest.mark.spark

# The key columns of the state table, with Spark's Kafka source names and types.
STATE_SCHEMA = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("partition", IntegerType(), nullable=False),
        StructField("key", BinaryType(), nullable=False),
        StructField("offset", LongType(), nullable=False),
        StructField("value", BinaryType(), nullable=True),
    ]
)


def state_df(
    spark: SparkSession, rows: list[tuple[str, int, bytes, int, bytes | None]]
) -> DataFrame:
    return spark.createDataFrame(rows, STATE_SCHEMA)


def test_merge_keeps_the_highest_offset_per_key(spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "state")
    state_df(
        spark,
        [
            ("orders", 0, b"a", 0, b"a0"),
            ("orders", 0, b"b", 1, b"b1"),
            ("orders", 1, b"a", 5, b"a5"),
        ],
    ).write.format("delta").save(path)
    updates = state_df(
        spark,
        [
            ("orders", 0, b"a", 7, b"a7"),  # newer: replaces a0
            ("orders", 0, b"b", 0, b"stale"),  # older: loses
            ("orders", 1, b"a", 5, b"same"),  # same offset: the stored record stays
            ("orders", 0, b"c", 8, None),  # new key, null value
            ("payments", 0, b"a", 3, b"p3"),  # same key, other topic
        ],
    )

    table = DeltaTable.forPath(spark, path)
    (
        table.alias("t")
        .merge(
            updates.alias("s"),
            "t.topic = s.topic AND t.partition = s.partition AND t.key = s.key",
        )
        .whenMatchedUpdateAll(condition="s.offset > t.offset")
        .whenNotMatchedInsertAll()
        .execute()
    )

    expected = state_df(
        spark,
        [
            ("orders", 0, b"a", 7, b"a7"),
            ("orders", 0, b"b", 1, b"b1"),
            ("orders", 0, b"c", 8, None),
            ("orders", 1, b"a", 5, b"a5"),
            ("payments", 0, b"a", 3, b"p3"),
        ],
    )
    assertDataFrameEqual(spark.read.format("delta").load(path), expected)

    history = table.history().orderBy("version").collect()
    assert [h.operation for h in history] == ["WRITE", "MERGE"]
    metrics = history[-1].operationMetrics
    assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == ("1", "2")


def test_python_workers_run_this_interpreter(spark: SparkSession) -> None:
    # bin/python and bin/python3 are both the venv: compare the environment and the binary.
    @udf(returnType=StringType())
    def worker_python() -> str:
        import os
        import sys

        return f"{sys.prefix} {os.path.realpath(sys.executable)}"

    [row] = spark.range(1).select(worker_python().alias("python")).collect()
    assert row.python == f"{sys.prefix} {os.path.realpath(sys.executable)}"


def test_python_workers_are_forked_with_the_tasks_code_imported(spark: SparkSession) -> None:
    # The function is pickled by value and imports nothing of segcompact's itself.
    @udf(returnType=StringType())
    def preloaded() -> str:
        import sys

        wanted = ("segcompact.spark.source", "segcompact.spark.materialize", "deltalake")
        daemon = sys.modules["__main__"].__spec__.name  # a reused worker has them anyway
        return ",".join([daemon, *(name for name in wanted if name in sys.modules)])

    assert spark.conf.get("spark.python.daemon.module") == "segcompact.spark.daemon"
    [row] = spark.range(1).select(preloaded().alias("modules")).collect()
    assert row.modules == (
        "segcompact.spark.daemon,segcompact.spark.source,segcompact.spark.materialize,deltalake"
    )


def test_python_workers_import_pyspark_compiled_not_from_sparks_zip(spark: SparkSession) -> None:
    # A module imported from Spark's pyspark.zip is compiled again in every Python process.
    if unzipped_home({}) is None:
        pytest.skip("SPARK_HOME set, another Python for workers, or no cache: Spark's own home")

    @udf(returnType=StringType())
    def imported_from() -> str:
        import os

        import pyspark.daemon

        return f"{pyspark.daemon.__file__}\n{os.environ.get('PYTHONPATH')}"

    [row] = spark.range(1).select(imported_from().alias("where")).collect()
    module, path = row.where.split("\n", 1)
    assert module == str(Path(pyspark.__file__).parent / "daemon.py"), module
    # Spark still names the zip first on the path: it is not in the home the JVM was given.
    first = path.split(os.pathsep)[0]
    assert first.endswith("pyspark.zip") and not os.path.exists(first), path


def test_missing_jars_say_to_run_make_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(JARS_DIR_ENV, str(tmp_path))
    with pytest.raises(SegcompactError, match=r"not found in .*; run `make setup`"):
        find_delta_jars()
