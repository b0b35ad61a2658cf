"""The state's rows of new partitions, written by the source's task as the state's own files.

A batch's winners were handed to the JVM as rows, which Spark then wrote into the state: for a
partition the state holds nothing of yet, the JVM took, held and encoded every winner (most of
a first run's cost past its fixed one). Where delta-rs commits to the state table, the batch
now leaves a :class:`Filing` beside its checkpoint before its first job: its time, the state's
location and the partitions the state knows. The source's task reads it (the ``stateFiles``
option) and writes the winners of the partitions the state does not know as a Parquet file of
the state's own per topic, the batch's time in ``cleaned_at`` and ``delete_horizon``, with
Delta's statistics (:class:`StateFile`); the task's last summary row names its files
(``state_file``). The batch commits those files with delta-rs (``NativeReader.add_files``),
under the idempotent-write pair the append had; where they cannot be committed as they are (a
partition's records not one per key, or in two files; a transaction in the batch), Spark reads
them as the winners' rows they replace, and they are removed.

A topic is filed only where its records go straight to the state (no
``min.compaction.lag.ms``) with no deletion SLA (whose ledger reads the winners' tombstones),
ranked by offset (the only strategy a task reduces to one record per key). A file no commit
names (a task retried, a batch replayed after its commit) is left to VACUUM, as Spark's own
writes leave theirs.
"""

from __future__ import annotations

import json
import posixpath
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from segcompact.delta.data_files import DataFile, Statistics
from segcompact.format.arrow import HEADER, TIMESTAMP
from segcompact.storage import Storage

FILING_NAME = "state-files.json"

# The state table's columns in a data file: its own, but the partition column ``topic``.
FILE_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("key", pa.binary(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", TIMESTAMP, nullable=False),
        pa.field("timestampType", pa.int32(), nullable=False),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(HEADER)),
        pa.field("order_value", pa.int64()),
        pa.field("tombstone", pa.bool_(), nullable=False),
        pa.field("delete_horizon", TIMESTAMP),
        pa.field("cleaned_at", TIMESTAMP, nullable=False),
    ]
)


def filing_location(checkpoint: str) -> str:
    """Where a job's batch leaves its :class:`Filing`: beside its query's checkpoint."""
    return posixpath.join(checkpoint, FILING_NAME)


@dataclass(frozen=True, slots=True)
class Filing:
    """What a batch tells its tasks: write the winners of a partition the state does not know
    (``known``) of a topic with a retention here (``retention_ms``, else ``default_ms``; None:
    not filed) into the state table at ``table`` (delta-rs's form of its location), at the
    batch's time ``now_ms``."""

    now_ms: int
    table: str
    known: frozenset[tuple[str, int]]
    retention_ms: Mapping[str, int | None]
    default_ms: int | None

    def retention(self, topic: str) -> int | None:
        """The topic's ``delete.retention.ms`` if its winners are filed, else None."""
        return self.retention_ms.get(topic, self.default_ms)

    def takes(self, topic: str, partition: int) -> bool:
        return (topic, partition) not in self.known and self.retention(topic) is not None

    def to_json(self) -> str:
        return json.dumps(
            {
                "now_ms": self.now_ms,
                "table": self.table,
                "known": sorted(self.known),
                "retention_ms": dict(self.retention_ms),
                "default_ms": self.default_ms,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Filing:
        d = json.loads(text)
        return cls(
            int(d["now_ms"]),
            str(d["table"]),
            frozenset((str(t), int(p)) for t, p in d["known"]),
            {str(t): None if ms is None else int(ms) for t, ms in d["retention_ms"].items()},
            None if d["default_ms"] is None else int(d["default_ms"]),
        )

    def publish(self, location: str, storage: Storage) -> None:
        """Leave it at ``location`` for the batch's tasks, in place of any earlier one."""
        fs, path = storage.resolve(location)
        fs.remove(path)
        fs.makedirs(posixpath.dirname(path))
        if not fs.create_exclusive(path, self.to_json().encode()):
            raise OSError(f"{location}: written by another job meanwhile")


def read_filing(location: str, storage: Storage) -> Filing | None:
    """The batch's filing at ``location``, None when there is none (no batch asked for one)."""
    fs, path = storage.resolve(location)
    try:
        return Filing.from_json(fs.read_bytes(path).decode())
    except FileNotFoundError:
        return None


def withdraw(location: str, storage: Storage) -> None:
    """No filing at ``location`` any more: a later read of the source files nothing."""
    fs, path = storage.resolve(location)
    fs.remove(path)


def remove_files(filing: Filing, files: Sequence[FiledWinners], storage: Storage) -> None:
    """Remove files whose rows were written otherwise (VACUUM would, later)."""
    fs, root = storage.resolve(filing.table)
    for f in files:
        fs.remove(fs.join(root, *f.path.split("/")))


@dataclass(frozen=True, slots=True)
class Filed:
    """What a file holds of one Kafka partition: its records, the earliest one's timestamp,
    the newest one's offset and its batch's codec."""

    partition: int
    records: int
    first_timestamp_ms: int
    last_offset: int
    compression: int


@dataclass(frozen=True, slots=True)
class FiledWinners:
    """A file of winners of a topic's partitions, as its task names it (``state_file``)."""

    topic: str
    path: str  # relative to the table, as the log names it
    size: int
    modification_time: int
    stats: str
    partitions: tuple[Filed, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def data_file(self) -> DataFile:
        """The file as the state's log names it."""
        values = {"topic": self.topic}
        return DataFile(self.path, self.size, values, self.modification_time, self.stats)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FiledWinners:
        return cls(**{**d, "partitions": tuple(Filed(**p) for p in d["partitions"])})


def name_files(files: Sequence[FiledWinners]) -> str | None:
    """The ``state_file`` of a task's last summary row: its files, as JSON (None: none)."""
    return json.dumps([f.to_json() for f in files]) if files else None


def named_files(names: Sequence[str]) -> list[FiledWinners]:
    """The files the ``state_file`` values ``names`` name."""
    return [FiledWinners.from_json(d) for text in names for d in json.loads(text)]


class StateFile:
    """The winners of a task's partitions of one topic, written as a state data file (the
    state is partitioned by topic): every keyed record that is neither transactional nor a
    control record (what the merge would take from the task), the rest left to the task's
    output. The file appears whole at :meth:`finish`, or not at all."""

    def __init__(self, filing: Filing, storage: Storage, topic: str) -> None:
        retention = filing.retention(topic)
        assert retention is not None, "a topic the filing does not take"
        self.topic = topic
        self._now = pa.scalar(filing.now_ms * 1000, TIMESTAMP)
        self._horizon = pa.scalar((filing.now_ms + retention) * 1000, TIMESTAMP)
        self._fs, root = storage.resolve(filing.table)
        # Spark's layout: a directory per value of the partition column.
        self.path = f"topic={topic}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        self._full = self._fs.join(root, *self.path.split("/"))
        self._file: Any = None
        self._writer: pq.ParquetWriter | None = None
        self._stats = Statistics(FILE_SCHEMA)
        self._partitions: dict[int, Filed] = {}
        self._held: list[pa.RecordBatch] = []  # the next row group's rows
        self._held_rows = 0
        self._held_bytes = 0

    def take(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """Write the winners among ``rows`` (the task's reduced, classified records of one
        partition of the topic); the others, which stay the task's output."""
        winner = pc.and_(
            rows.column("key").is_valid(),
            pc.invert(pc.or_(rows.column("is_transactional"), rows.column("is_control"))),
        )
        filed = rows.filter(winner)
        if filed.num_rows:
            self._write(filed)
        return rows.filter(pc.invert(winner)) if filed.num_rows else rows

    def _write(self, rows: pa.RecordBatch) -> None:
        if self._writer is None:
            self._fs.makedirs(posixpath.dirname(self._full))
            self._file = _Counted(self._fs.new_file(self._full))
            self._writer = pq.ParquetWriter(self._file, FILE_SCHEMA, compression="snappy")
        n = rows.num_rows
        tombstone = rows.column("tombstone")
        horizon = pc.if_else(
            tombstone,
            pc.coalesce(rows.column("delete_horizon"), self._horizon),
            pa.scalar(None, TIMESTAMP),
        )
        columns = [rows.column(f.name) for f in FILE_SCHEMA if f.name not in _COMPUTED]
        written = pa.RecordBatch.from_arrays(
            [*columns, horizon, pa.repeat(self._now, n)], schema=FILE_SCHEMA
        )
        self._held.append(written)
        self._held_rows += n
        self._held_bytes += written.nbytes
        if self._held_rows >= _ROW_GROUP_ROWS or self._held_bytes >= _ROW_GROUP_BYTES:
            self._flush()
        self._stats.add(written)
        partition = rows.column("partition")[0].as_py()
        first = pc.min(rows.column("timestamp")).cast(pa.int64()).as_py() // 1000
        offsets = rows.column("offset")
        newest = pc.index(offsets, pc.max(offsets)).as_py()
        last = (offsets[newest].as_py(), rows.column("compression")[newest].as_py())
        had = self._partitions.get(partition)
        if had is not None:
            first = min(first, had.first_timestamp_ms)
            last = max(last, (had.last_offset, had.compression), key=lambda o: o[0])
            n += had.records
        self._partitions[partition] = Filed(partition, n, first, *last)

    def _flush(self) -> None:
        """The rows held, as one row group (each write is one at least: a task's thousand
        small partitions made a file of thousands, which Spark's MERGE read slowly)."""
        if self._held and self._writer is not None:
            self._writer.write_table(pa.Table.from_batches(self._held), row_group_size=None)
        self._held, self._held_rows, self._held_bytes = [], 0, 0

    def finish(self) -> FiledWinners | None:
        """The file, whole; None when no winner came."""
        if self._writer is None:
            return None
        self._flush()
        self._writer.close()
        size = self._file.size
        if not self._file.publish():
            raise OSError(f"{self._full}: a file is there already")
        return FiledWinners(
            self.topic,
            self.path,
            size,
            int(time.time() * 1000),
            self._stats.to_json(),
            tuple(self._partitions[p] for p in sorted(self._partitions)),
        )

    def discard(self) -> None:
        """Nothing written appears (the task failed)."""
        if self._file is not None:
            self._file.discard()


_COMPUTED = ("delete_horizon", "cleaned_at")
# A row group is written once the rows held reach either (a chunk of records leaving a big
# partition is one already; Spark's are up to 128 MiB).
_ROW_GROUP_ROWS = 1 << 17
_ROW_GROUP_BYTES = 16 << 20


class _Counted:
    """A new file as Parquet's writer takes it: where it is, and how much went in."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self.size = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self._file.write(data)
        self.size += len(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def publish(self) -> bool:
        return bool(self._file.publish())

    def discard(self) -> None:
        self._file.discard()
