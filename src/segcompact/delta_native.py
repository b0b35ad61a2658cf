"""Delta tables read by delta-rs, without the JVM (and vacuumed, on local disks).

Opening a table, its version, properties and commit times, reading a small table's rows, and
VACUUM take milliseconds here against a second or more of Spark jobs each, which every upkeep
pays for several tables. Spark writes the tables; delta-rs only reads them and, for VACUUM,
removes files and logs the ``VACUUM START``/``VACUUM END`` commits Delta's own VACUUM logs.
What delta-rs cannot read or write (a protocol feature it lacks) raises a ``DeltaError``: the
callers then ask Spark.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaError

from segcompact.config.locations import is_table_name
from segcompact.storage.settings import scheme_of

if TYPE_CHECKING:
    from segcompact.storage import Storage


def local_path(location: str) -> str | None:
    """The local path of a table location (a ``file:`` URI or a plain path), else None."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)
    if "://" in location or ":" in location.split("/", 1)[0]:
        return None  # another file system (s3a://, abfss://, dbfs:/…)
    return location


def native_location(location: str, storage: Storage) -> tuple[str, dict[str, str]] | None:
    """Where and how delta-rs opens the table at ``location`` (a path, absolute or relative to
    the working directory, or a URI); None when it cannot: a catalog name, a store delta-rs is
    not given here, a relative path on a default file system that is not the local one."""
    if is_table_name(location):
        return None
    if scheme_of(location) is None and not os.path.isabs(location):
        if not storage.hadoop.get("fs.defaultFS", "file:///").startswith("file:"):
            return None  # relative to the user's home on HDFS or the like: Hadoop knows
        location = os.path.abspath(location)
    options = storage.delta_options(location)
    if options is None:
        return None
    return local_path(location) or location, options


def open_table(location: str, storage_options: dict[str, str] | None = None) -> DeltaTable:
    return DeltaTable(location, storage_options=storage_options or None)


@dataclass(frozen=True, slots=True)
class Pinned:
    """One version of a table, as delta-rs opens it wherever it runs (an executor too)."""

    location: str
    storage_options: dict[str, str] = field(hash=False)
    version: int

    def open(self) -> DeltaTable:
        return DeltaTable(
            self.location, version=self.version, storage_options=self.storage_options or None
        )


def schema_json(location: str, storage_options: dict[str, str] | None = None) -> str | None:
    """The schema of the table at ``location`` in Delta's JSON (Spark's ``StructType`` JSON);
    None when there is no table there or delta-rs cannot read its log."""
    try:
        return str(open_table(location, storage_options).schema().to_json())
    except DeltaError:  # TableNotFoundError among them
        return None


def commit_times(table: DeltaTable, since: int) -> dict[int, int]:
    """Each commit's time (epoch ms, as its commit info has it) from version ``since`` on."""
    newest = table.version()
    if newest < since:
        return {}
    return {
        int(h["version"]): int(h["timestamp"])
        for h in table.history(newest - since + 1)
        if "version" in h and "timestamp" in h
    }


def read(
    table: DeltaTable, columns: Sequence[str] | None, where: pc.Expression | None
) -> pa.Table | None:
    """The live rows matching ``where`` (all when None), ``columns`` only (all when None); None
    when delta-rs cannot read this table's protocol. A table with deletion vectors, which
    delta-rs' Arrow dataset refuses, is read through its SQL engine (DataFusion applies them)."""
    try:
        dataset = table.to_pyarrow_dataset()
    except DeltaError:
        return _read_by_sql(table, columns, where)
    # Arrow's scan threads may still be winding down when the interpreter exits (std::terminate
    # aborts the process then, seen with `run --once`): these reads are small, one thread does.
    return dataset.to_table(
        columns=None if columns is None else list(columns), filter=where, use_threads=False
    )


def _read_by_sql(
    table: DeltaTable, columns: Sequence[str] | None, where: pc.Expression | None
) -> pa.Table | None:
    try:
        query = QueryBuilder().register("t", table)
        rows = pa.RecordBatchReader.from_stream(query.execute("SELECT * FROM t")).read_all()
    except DeltaError:
        return None
    # DataFusion's own types (string views) and column order, as the Arrow reader gives them.
    schema = pa.schema(table.schema().to_arrow())
    rows = rows.select(schema.names).cast(schema)
    rows = rows if where is None else rows.filter(where)
    return rows if columns is None else rows.select(list(columns))


# What DataFusion's sort holds in memory before it spills to the temporary directory.
SORT_MEMORY = "256M"


class SortError(RuntimeError):
    """DataFusion could not read or sort a partition's rows (its memory, a feature it lacks)."""


def partitions_log(
    state: DeltaTable,
    young: DeltaTable,
    partitions: Sequence[tuple[str, int]],
    columns: Sequence[str],
    *,
    memory: str = SORT_MEMORY,
    spill: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``state`` and of ``young`` (``raw`` true) of ``partitions`` (topic,
    partition), ``columns`` of them, in (topic, partition, offset) order, as DataFusion streams
    them in one thread: the files of other partitions are skipped (by partition values, else by
    statistics), deletion vectors applied, and the sort spills beyond ``memory`` into ``spill``
    (the temporary directory when None). One query for them all: each query lists the tables'
    files, so one per partition would cost in proportion to the partitions squared. What goes
    wrong in DataFusion raises :class:`SortError`, in one line (without the partitions)."""
    query = QueryBuilder({"datafusion.execution.target_partitions": "1"})
    query = query.register("state", state).register("young", young)
    settings = [f"SET datafusion.runtime.memory_limit = {sql_text(memory)}"]
    if spill is not None:
        settings.append(f"SET datafusion.runtime.temp_directory = {sql_text(spill)}")
    names = ", ".join(_identifier(c) for c in columns)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(int(partition))
    where = " OR ".join(
        f'("topic" = {sql_text(topic)} AND "partition" IN ({", ".join(map(str, sorted(ps)))}))'
        for topic, ps in sorted(by_topic.items())
    )
    sql = (
        f"SELECT {names}, false AS raw FROM state WHERE {where} UNION ALL "
        f'SELECT {names}, true AS raw FROM young WHERE {where} ORDER BY "topic", "partition", '
        '"offset"'
    )
    try:
        for setting in settings:
            pa.RecordBatchReader.from_stream(query.execute(setting)).read_all()
        yield from pa.RecordBatchReader.from_stream(query.execute(sql))
    except (pa.ArrowException, DeltaError) as e:
        raise SortError(" ".join(str(e).split())) from e


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_text(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def file_count(table: DeltaTable) -> int | None:
    """How many data files the table's snapshot holds; None when delta-rs cannot read its
    log."""
    try:
        return int(pa.table(table.get_add_actions(flatten=True)).num_rows)
    except DeltaError:
        return None


# The table partitions segcompact compacts: a topic (the state's and the young table's layout),
# or a Kafka partition (their layout in earlier segcompacts, still read and compacted).
LAYOUT = ("topic", "partition")


def layout_width(partition_columns: Sequence[str]) -> int:
    """How many of :data:`LAYOUT`'s columns a table is partitioned by: 0 when partitioned
    otherwise (a table made so before segcompact: its layout is its owner's)."""
    width = len(partition_columns)
    return width if 0 < width <= len(LAYOUT) and tuple(partition_columns) == LAYOUT[:width] else 0


def small_files(table: DeltaTable, below: int) -> tuple[int, dict[tuple[Any, ...], int]]:
    """The table's :func:`layout_width`, and per table partition (its values of those columns),
    how many of its data files are smaller than ``below`` bytes, from the log; raises
    ``DeltaError`` when delta-rs cannot read it."""
    width = layout_width(list(table.metadata().partition_columns))
    if not width:
        return 0, {}
    by = [f"partition.{c}" for c in LAYOUT[:width]]
    files = pa.table(table.get_add_actions(flatten=True))
    small = files.filter(pc.field("size_bytes") < below)
    counts = small.group_by(by).aggregate([([], "count_all")])
    return width, {
        tuple(_typed(c, r[f"partition.{c}"]) for c in LAYOUT[:width]): r["count_all"]
        for r in counts.to_pylist()
    }


def _typed(column: str, value: Any) -> Any:
    return value if column == "topic" else int(value)


def smallest(table: DeltaTable, column: str) -> Any:
    """The smallest non-null value of the top-level ``column`` among the live rows, from the
    files' statistics in the log (no data file is read); None when no row holds one. Raises
    ``LookupError`` when a file that may hold one has no statistics for it."""
    try:
        files = pa.table(table.get_add_actions(flatten=True))
    except DeltaError as e:
        raise LookupError(str(e)) from e
    least, nulls = f"min.{column}", f"null_count.{column}"
    if files.num_rows == 0:
        return None
    if least not in files.column_names or nulls not in files.column_names:
        raise LookupError(f"no statistics for {column}")
    unknown = pc.field(least).is_null() & (
        pc.field(nulls).is_null()
        | pc.field("num_records").is_null()
        | (pc.field(nulls) < pc.field("num_records"))
    )
    if files.filter(unknown).num_rows:
        raise LookupError(f"a file without statistics for {column}")
    return pc.min(files.column(least)).as_py()


def vacuum(table: DeltaTable) -> bool:
    """VACUUM with the table's own ``delta.deletedFileRetentionDuration`` and the retention check
    on, files unknown to the log included (what a failed write left). False when delta-rs cannot
    write this table's protocol or may not know all its files (Spark's VACUUM then does it).

    A table with reader features is refused: delta-rs (1.6) does not count a deletion vector's
    file as live and would delete the live ones older than the retention."""
    if table.protocol().reader_features:
        return False
    try:
        table.vacuum(dry_run=False, enforce_retention_duration=True, full=True)
    except DeltaError:
        return False
    return True


__all__ = [
    "SORT_MEMORY",
    "DeltaError",
    "DeltaTable",
    "Pinned",
    "SortError",
    "commit_times",
    "file_count",
    "local_path",
    "open_table",
    "partitions_log",
    "read",
    "schema_json",
    "small_files",
    "smallest",
    "sql_text",
    "vacuum",
]
