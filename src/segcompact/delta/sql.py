"""SQL over the job's Delta tables for the read-only commands: by delta-rs (DataFusion, in the
process, no JVM) wherever it can open every table named, else by Spark.

``status`` and ``sla`` ask a few aggregates of tables that may hold millions of rows; DataFusion
streams them in a fraction of a second where Spark's start alone takes ten. delta-rs cannot open
a catalog table by name, a store it is not given (``hdfs://``, ``abfss://`` here) or a protocol
it does not read: :meth:`DeltaSql.open` says so with None, and the command asks Spark instead
(``segcompact.spark.table_reader.SparkSql``, handed in as :data:`SparkViews`). Both engines run
the same query text: only identifiers are quoted differently.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaError, TableNotFoundError

from segcompact.delta.location import native_location

if TYPE_CHECKING:
    from segcompact.storage import Storage


class TableSql(Protocol):
    def quote(self, name: str) -> str:
        """``name`` as an identifier of this engine's SQL (``partition`` is a keyword)."""
        ...

    def query(self, sql: str) -> pa.Table:
        """The rows of ``sql``, whose table names are the views this engine was opened with."""
        ...


# Spark's SQL over the views (name → table location), for tables delta-rs cannot open: the
# caller's, which starts Spark only when asked.
SparkViews = Callable[[Mapping[str, str]], TableSql]


class DeltaSql:
    """delta-rs' DataFusion over tables opened by path (deletion vectors read too). A query
    naming a table not created yet (a job that has not run) raises :class:`NoTable`."""

    def __init__(self, views: Mapping[str, DeltaTable | None]) -> None:
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
        opened: dict[str, DeltaTable | None] = {}
        for name, location in views.items():
            where = native_location(location, storage)
            if where is None:
                return None
            path, options = where
            try:
                opened[name] = DeltaTable(path, storage_options=options or None)
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


def open_sql(views: Mapping[str, str], storage: Storage, spark: SparkViews) -> TableSql:
    """delta-rs over the views when it can open them all, else Spark's (``spark``, asked for
    only then)."""
    native = DeltaSql.open(views, storage)
    return native if native is not None else spark(views)


def sql_text(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"
