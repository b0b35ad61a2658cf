"""Delta tables read by delta-rs, without the JVM (and given small MERGEs; vacuumed on local
disks).

Opening a table, its version, properties and commit times, reading a small table's rows, and
VACUUM take milliseconds here against a second or more of Spark jobs each, which every upkeep
pays for several tables. Spark writes the tables' records; delta-rs reads them and, for VACUUM,
removes files and logs the ``VACUUM START``/``VACUUM END`` commits Delta's own VACUUM logs. It
also commits the MERGEs of a few rows the driver holds (``merge_sql``), with the idempotent-write
pair as the same ``txn`` action Spark's writes record and honour.

:func:`open_reader` chooses the engine of a table once, from its location: delta-rs where it
opens it, else Spark. A table delta-rs opens but whose rows it cannot read (a protocol feature it
lacks) is read by the Spark reader it was given, for those reads only.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import DeltaError, DeltaProtocolError, TableNotFoundError
from deltalake.transaction import AddAction, CommitProperties, PostCommitHookProperties, Transaction

from segcompact.clock import epoch_ms
from segcompact.delta.data_files import DataFile
from segcompact.delta.location import local_path, native_location
from segcompact.delta.merge_sql import RowsMerge
from segcompact.delta.pinned import Pinned

if TYPE_CHECKING:
    from segcompact.delta.reader import TableReader
    from segcompact.storage import Storage


def open_reader(location: str, storage: Storage, spark: TableReader) -> TableReader:
    """The reader of the table at ``location`` (a path or a catalog name): delta-rs where it
    opens the table, else ``spark`` (which also reads what delta-rs then fails to read)."""
    where = native_location(location, storage)
    return spark if where is None else NativeReader(*where, spark)


# The table partitions segcompact compacts: a topic (the state's and the young table's layout),
# or a Kafka partition (their layout in earlier segcompacts, still read and compacted).
LAYOUT = ("topic", "partition")


def layout_width(partition_columns: Sequence[str]) -> int:
    """How many of :data:`LAYOUT`'s columns a table is partitioned by: 0 when partitioned
    otherwise (a table made so before segcompact: its layout is its owner's)."""
    width = len(partition_columns)
    return width if 0 < width <= len(LAYOUT) and tuple(partition_columns) == LAYOUT[:width] else 0


class NativeReader:
    """A :class:`~segcompact.delta.reader.TableReader` by delta-rs: the table is opened at the
    first read, once. ``otherwise`` reads what delta-rs cannot (Spark)."""

    def __init__(self, location: str, options: dict[str, str], otherwise: TableReader) -> None:
        self.location = location
        self.options = options
        self.otherwise = otherwise
        self._table: DeltaTable | None = None

    @property
    def table(self) -> DeltaTable:
        if self._table is None:
            self._table = DeltaTable(self.location, storage_options=self.options or None)
        return self._table

    def schema_json(self) -> str | None:
        try:
            return str(self.table.schema().to_json())
        except TableNotFoundError:
            return None
        except DeltaError:  # a log delta-rs cannot read
            return self.otherwise.schema_json()

    def version(self) -> int:
        return int(self.table.version())

    def properties(self) -> dict[str, str]:
        return dict(self.table.metadata().configuration)

    def commit_times(self, since: int) -> dict[int, int]:
        newest = self.table.version()
        if newest < since:
            return {}
        return {
            int(h["version"]): int(h["timestamp"])
            for h in self.table.history(newest - since + 1)
            if "version" in h and "timestamp" in h
        }

    def arrow(
        self, columns: Sequence[str] | None = None, where: pc.Expression | None = None
    ) -> pa.Table:
        """A table with deletion vectors, which delta-rs' Arrow dataset refuses, is read through
        its SQL engine (DataFusion applies them); Spark reads what neither can."""
        try:
            dataset = self.table.to_pyarrow_dataset()
        except DeltaError:
            rows = self._read_by_sql(columns, where)
            return self.otherwise.arrow(columns, where) if rows is None else rows
        # Arrow's scan threads may still be winding down when the interpreter exits
        # (std::terminate aborts the process then, seen with `run --once`): these reads are
        # small, one thread does.
        wanted = None if columns is None else list(columns)
        try:
            return dataset.to_table(columns=wanted, filter=where, use_threads=False)
        except pa.ArrowNotImplementedError:
            # A file delta-rs wrote (its MERGEs) holds strings as string views, which Arrow's
            # scan (pyarrow 26) cannot compare with a string in a filter; read, then filter.
            rows = dataset.to_table(use_threads=False)
            rows = rows if where is None else rows.filter(where)
            return rows if wanted is None else rows.select(wanted)

    def _read_by_sql(
        self, columns: Sequence[str] | None, where: pc.Expression | None
    ) -> pa.Table | None:
        try:
            query = QueryBuilder().register("t", self.table)
            rows = pa.RecordBatchReader.from_stream(query.execute("SELECT * FROM t")).read_all()
        except DeltaError:
            return None
        # DataFusion's own types (string views) and column order, as the Arrow reader gives them.
        schema = pa.schema(self.table.schema().to_arrow())
        rows = rows.select(schema.names).cast(schema)
        rows = rows if where is None else rows.filter(where)
        return rows if columns is None else rows.select(list(columns))

    def may_hold_rows(self) -> bool:
        try:
            return int(pa.table(self.table.get_add_actions(flatten=True)).num_rows) > 0
        except DeltaError:
            return self.otherwise.may_hold_rows()

    def may_hold_until(self, column: str, ms: int) -> bool:
        try:
            least = smallest(self.table, column)
        except (LookupError, DeltaError):  # no statistics, or a log delta-rs cannot read
            return True
        least_ms = epoch_ms(least)
        return least_ms is not None and least_ms <= ms

    def small_files(
        self, below: int, partitions: Collection[tuple[str, int]]
    ) -> tuple[int, dict[tuple[Any, ...], int]]:
        """Every table partition's count, from the log."""
        try:
            width = layout_width(list(self.table.metadata().partition_columns))
            if not width:
                return 0, {}
            files = pa.table(self.table.get_add_actions(flatten=True))
        except DeltaError:  # a protocol feature delta-rs lacks
            return self.otherwise.small_files(below, partitions)
        by = [f"partition.{c}" for c in LAYOUT[:width]]
        small = files.filter(pc.field("size_bytes") < below)
        counts = small.group_by(by).aggregate([([], "count_all")])
        return width, {
            tuple(_typed(c, r[f"partition.{c}"]) for c in LAYOUT[:width]): r["count_all"]
            for r in counts.to_pylist()
        }

    def pinned(self) -> Pinned | None:
        try:
            version = int(self.table.version())
        except DeltaError:
            return None
        return Pinned(self.location, self.options, version)

    def vacuum(self) -> bool:
        """VACUUM with the table's own ``delta.deletedFileRetentionDuration`` and the retention
        check on, files unknown to the log included (what a failed write left). False when
        delta-rs should not: on an object store (its commit would not go through the LogStore
        Spark's commits use), a protocol it cannot write, or files it may not know (Spark's
        VACUUM then does it).

        A table with reader features is refused: delta-rs (1.6) does not count a deletion
        vector's file as live and would delete the live ones older than the retention."""
        if local_path(self.location) is None or self.table.protocol().reader_features:
            return False
        try:
            self.table.vacuum(dry_run=False, enforce_retention_duration=True, full=True)
        except DeltaError:
            return False
        return True

    def create(
        self, schema_json: str, partition_by: Sequence[str], configuration: dict[str, str]
    ) -> str:
        """Create the table empty, with Delta's schema ``schema_json`` (Spark's ``StructType``
        JSON), ``partition_by`` and the properties ``configuration``, unless one exists there
        already (another job created it meanwhile); its schema's JSON either way.

        One commit of the protocol and metadata, as Spark's own CREATE writes them for a table
        without table features (reader 1, writer 2), and no Delta transaction in the JVM: a new
        job's run on an empty source costs a fifth less CPU (``docs/performance.md``)."""
        DeltaTable.create(
            self.location,
            DeltaSchema.from_json(schema_json),
            mode="ignore",
            partition_by=list(partition_by) or None,
            configuration=dict(configuration) or None,
            storage_options=self.options or None,
        )
        self._table = None
        return str(self.table.schema().to_json())

    def merges(self) -> bool:
        """Whether :meth:`merge` commits to this table (else it answers False, and Spark MERGEs):
        a table without reader features, whose log delta-rs reads."""
        try:
            return not self.table.protocol().reader_features
        except DeltaError:
            return False

    def merge(self, rows: pa.Table, merge: RowsMerge, write: tuple[str, int] | None) -> bool:
        """MERGE ``rows`` (a few, held by the driver) into the table, skipped if the
        idempotent-write pair ``write`` (app id, version) was committed already, by delta-rs or
        by Spark (None: never skipped). False when delta-rs should not, having written nothing:
        a table with reader features (delta-rs 1.6 would rewrite a file without its deletion
        vector) or a protocol it cannot write.

        Its commit is exclusive on local disks (a rename that fails if the version exists, as
        Spark's) and on S3 (a conditional write). Spark's commits to S3 are not (Delta's
        single-driver LogStore checks, then writes), so no Spark commit to the table may run
        meanwhile: a job writes its tables from one thread at a time (``spark.job``), and
        every command that writes holds the job's lease (``app.preconditions.lease``)."""
        if not self.merges():
            return False
        table = self.table
        try:
            if write is not None:
                app_id, version = write
                done = table.transaction_version(app_id)
                if done is not None and done >= version:
                    return True
            merger = table.merge(
                rows,
                merge.on,
                source_alias="s",
                target_alias="t",
                commit_properties=None
                if write is None
                else CommitProperties(app_transactions=[Transaction(*write)]),
            ).when_matched_update(updates=dict(merge.update), predicate=merge.when)
            if merge.insert:
                merger = merger.when_not_matched_insert(updates=dict(merge.insert))
            merger.execute()
        except DeltaProtocolError:
            return False
        self._table = None  # its next read sees the commit
        return True

    def add_files(self, files: Sequence[DataFile], write: tuple[str, int]) -> bool:
        """Commit ``files``, written into the table with their statistics, as one append,
        skipped if the idempotent-write pair ``write`` was committed already (by delta-rs or by
        Spark). False when delta-rs should not, having committed nothing: a protocol it cannot
        write. It makes no checkpoint: delta-rs (1.6) could leave out the deletion vectors of
        a table that has them, which Spark's next checkpoints keep."""
        table = self.table
        app_id, version = write
        try:
            done = table.transaction_version(app_id)
            if done is not None and done >= version:
                return True
            table.create_write_transaction(
                [
                    AddAction(
                        f.path,
                        f.size,
                        dict(f.partition_values),
                        f.modification_time,
                        True,
                        f.stats,
                    )
                    for f in files
                ],
                mode="append",
                schema=table.schema(),
                partition_by=list(table.metadata().partition_columns) or None,
                commit_properties=CommitProperties(app_transactions=[Transaction(*write)]),
                post_commithook_properties=PostCommitHookProperties(
                    create_checkpoint=False, cleanup_expired_logs=False
                ),
            )
        except DeltaProtocolError:
            return False
        self._table = None  # its next read sees the commit
        return True


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
