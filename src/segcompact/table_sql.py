"""SQL over the job's Delta tables for the read-only commands: by delta-rs (DataFusion, in the
process, no JVM) wherever it can open every table named, else by Spark.

``status`` and ``sla`` ask a few aggregates of tables that may hold millions of rows; DataFusion
streams them in a fraction of a second where Spark's start alone takes ten. delta-rs cannot open
a catalog table by name, a store it is not given (``hdfs://``, ``abfss://`` here) or a protocol
it does not read: :meth:`DeltaSql.open` says so with None, and the command asks Spark instead.
Both engines run the same query text: only identifiers are quoted differently. How Spark
names a table's path (:func:`qualify`) is here too, for these reads and ``spark.tables``' writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from segcompact import delta_native
from segcompact.config.locations import is_table_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from segcompact.storage import Storage


class TableSql(Protocol):
    def quote(self, name: str) -> str:
        """``name`` as an identifier of this engine's SQL (``partition`` is a keyword)."""
        ...

    def query(self, sql: str) -> pa.Table:
        """The rows of ``sql``, whose table names are the views this engine was opened with."""
        ...


class DeltaSql:
    """delta-rs' DataFusion over tables opened by path (deletion vectors read too). A query
    naming a table not created yet (a job that has not run) raises :class:`NoTable`."""

    def __init__(self, views: Mapping[str, delta_native.DeltaTable | None]) -> None:
        from deltalake import QueryBuilder

        self._builder = QueryBuilder()
        self._missing: set[str] = set()
        for name, table in views.items():
            if table is None:
                self._missing.add(name)
            else:
                self._builder.register(name, table)

    @classmethod
    def open(cls, views: Mapping[str, str], storage: Storage) -> DeltaSql | None:
        """The views (name → table location), or None when delta-rs cannot open one of them."""
        from deltalake.exceptions import DeltaError, TableNotFoundError

        opened: dict[str, delta_native.DeltaTable | None] = {}
        for name, location in views.items():
            where = delta_native.native_location(location, storage)
            if where is None:
                return None
            try:
                opened[name] = delta_native.open_table(*where)
            except TableNotFoundError:
                opened[name] = None
            except DeltaError:
                return None
        return cls(opened)

    def quote(self, name: str) -> str:
        return f'"{name}"'

    def query(self, sql: str) -> pa.Table:
        missing = sorted(n for n in self._missing if re.search(rf"\bFROM {n}\b", sql, re.I))
        if missing:
            raise NoTable(", ".join(missing))
        return pa.RecordBatchReader.from_stream(self._builder.execute(sql)).read_all()


class NoTable(LookupError):
    """A view's table does not exist yet."""


class SparkSql:
    """Spark SQL over the tables (catalog names or paths), as temporary views."""

    def __init__(self, spark: SparkSession, views: Mapping[str, str]) -> None:
        self.spark = spark
        for name, location in views.items():
            if is_table_name(location):
                spark.table(location).createOrReplaceTempView(name)
            else:
                spark.read.format("delta").load(qualify(spark, location)).createOrReplaceTempView(
                    name
                )

    def quote(self, name: str) -> str:
        return f"`{name}`"

    def query(self, sql: str) -> pa.Table:
        return self.spark.sql(sql).toArrow()


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


def open_sql(
    views: Mapping[str, str], storage: Storage, spark: Callable[[], SparkSession]
) -> TableSql:
    """delta-rs over the views when it can open them all, else Spark (the session ``spark``
    gives, asked for only then)."""
    native = DeltaSql.open(views, storage)
    return native if native is not None else SparkSql(spark(), views)
