"""Spark's reads of the Delta tables, where delta-rs cannot open them (a catalog name, a store
delta-rs is not given, a protocol feature it lacks): :class:`SparkReader`, the
:class:`~segcompact.delta.reader.TableReader` by Spark, and :class:`SparkSql`, the
:class:`~segcompact.delta.sql.TableSql` by Spark. :func:`reader` is a table's reader, chosen
once from its location (``segcompact.delta.native.open_reader``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from segcompact.config.locations import is_table_name
from segcompact.delta.native import LAYOUT, layout_width, open_reader

if TYPE_CHECKING:
    from segcompact.delta.pinned import Pinned
    from segcompact.delta.reader import TableReader
    from segcompact.storage import Storage


def reader(spark: SparkSession, name: str, storage: Storage) -> TableReader:
    """The reader of the table ``name`` (a path or a catalog name): delta-rs where it opens the
    table, else Spark."""
    location = name if is_table_name(name) else qualify(spark, name)
    return open_reader(location, storage, SparkReader(spark, location))


def qualify(spark: SparkSession, path: str) -> str:
    """``path`` made absolute on its file system, as Hadoop resolves it.

    Delta reads a relative location as a table identifier; a relative path means the working
    directory locally and the user's home directory on HDFS, which only Hadoop knows.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return str(fs.makeQualified(hadoop_path).toString())


def delta_table(spark: SparkSession, name: str) -> DeltaTable:
    """Delta Lake's handle on the table ``name`` (a path or a catalog name)."""
    if is_table_name(name):
        return DeltaTable.forName(spark, name)
    return DeltaTable.forPath(spark, qualify(spark, name))


def of_partitions(partitions: Collection[tuple[str, int]], table: str = "") -> Column:
    """The rows of these (topic, partition) pairs, by columns prefixed ``table`` (``"t."`` for a
    MERGE's target): Delta reads only those partitions' files."""
    by_topic: dict[str, set[int]] = {}
    for name, partition in partitions:
        by_topic.setdefault(name, set()).add(partition)
    if not by_topic:
        return F.lit(True)  # every file: never a condition that matches nothing
    return functools.reduce(
        operator.or_,
        (
            (F.col(f"{table}topic") == F.lit(name)) & F.col(f"{table}partition").isin(sorted(ps))
            for name, ps in sorted(by_topic.items())
        ),
    )


class SparkReader:
    """A :class:`~segcompact.delta.reader.TableReader` by Spark: Delta Lake's metadata calls,
    and Spark jobs for rows."""

    def __init__(self, spark: SparkSession, name: str) -> None:
        self.spark = spark
        self.name = name

    def _delta(self) -> DeltaTable:
        return delta_table(self.spark, self.name)

    def schema_json(self) -> str | None:
        try:
            return str(self._delta().toDF().schema.json())
        except AnalysisException:  # no Delta table there
            return None

    def version(self) -> int:
        row = self._delta().history(1).select("version").first()
        return int(row[0]) if row is not None else 0

    def properties(self) -> dict[str, str]:
        detail = self._delta().detail().select("properties").first()
        return dict(detail[0] or {}) if detail is not None else {}

    def commit_times(self, since: int) -> dict[int, int]:
        rows = (
            self._delta()
            .history()
            .where(F.col("version") >= since)
            .select("version", F.unix_millis("timestamp"))
            .collect()
        )
        return {int(r[0]): int(r[1]) for r in rows}

    def arrow(
        self, columns: Sequence[str] | None = None, where: pc.Expression | None = None
    ) -> pa.Table:
        """The whole table, then filtered here."""
        rows = self._delta().toDF().toArrow()
        rows = rows if where is None else rows.filter(where)
        return rows if columns is None else rows.select(list(columns))

    def may_hold_rows(self) -> bool:
        return not self._delta().toDF().isEmpty()

    def may_hold_until(self, column: str, ms: int) -> bool:
        return True  # not known without a job

    def small_files(
        self, below: int, partitions: Collection[tuple[str, int]]
    ) -> tuple[int, dict[tuple[Any, ...], int]]:
        """From the files' metadata, by a Spark job over the files of ``partitions``."""
        detail = self._delta().detail().select("partitionColumns").first()
        width = layout_width(list(detail[0] or []) if detail is not None else [])
        if not width:
            return 0, {}
        by = list(LAYOUT[:width])
        files = (
            self._delta()
            .toDF()
            .where(of_partitions(partitions))
            .select(*by, "_metadata.file_path", "_metadata.file_size")
            .where(F.col("file_size") < below)
            .distinct()
            .groupBy(*by)
            .count()
        )
        return width, {tuple(r[c] for c in by): r["count"] for r in files.collect()}

    def pinned(self) -> Pinned | None:
        return None  # delta-rs cannot open it: Spark reads it on executors


class SparkSql:
    """Spark SQL over the tables (catalog names or paths), as temporary views."""

    def __init__(self, spark: SparkSession, views: Mapping[str, str]) -> None:
        self.spark = spark
        for name, location in views.items():
            delta_table(spark, location).toDF().createOrReplaceTempView(name)

    def quote(self, name: str) -> str:
        return f"`{name}`"

    def query(self, sql: str) -> pa.Table:
        return self.spark.sql(sql).toArrow()
