"""The state's rows of new partitions, written by the source's task as the state's own files.

A batch's winners were handed to the JVM as rows, which Spark then wrote into the state: for a
partition the state holds nothing of yet, the JVM took, held and encoded every winner (most of
a first run's cost past its fixed one). Where delta-rs commits to the state table, the batch
now leaves a :class:`Filing` beside its checkpoint before its first job: its time, the state's
location and the partitions the state knows. The source's task reads it (the ``stateFiles``
option) and writes the winners of a partition the state does not know as a Parquet file of the
state's own, the batch's time in ``cleaned_at`` and ``delete_horizon``, with Delta's statistics
(:class:`StateFile`); the summary row of the partition's last segment names it
(``state_file``). The batch commits those files with delta-rs (``NativeReader.add_files``),
under the idempotent-write pair the append had; where one cannot be committed as it is (its
partition's records are not one per key, or wait on a transaction), Spark reads it as the
winners' rows it replaces, and it is removed.

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
from dataclasses import dataclass
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
class FiledWinners:
    """A file of a partition's winners, as its summary row names it (``state_file``)."""

    topic: str
    partition: int
    path: str  # relative to the table, as the log names it
    size: int
    modification_time: int
    stats: str
    records: int
    first_timestamp_ms: int  # the earliest record's
    last_offset: int  # the newest record's, and its batch's codec
    compression: int

    def to_json(self) -> str:
        return json.dumps({name: getattr(self, name) for name in self.__slots__})

    def data_file(self) -> DataFile:
        """The file as the state's log names it."""
        values = {"topic": self.topic}
        return DataFile(self.path, self.size, values, self.modification_time, self.stats)

    @classmethod
    def from_json(cls, text: str) -> FiledWinners:
        return cls(**json.loads(text))


class StateFile:
    """The winners of one partition's run of segments, written as a state data file: every
    keyed record that is neither transactional nor a control record (what the merge would take
    from the task), the rest left to the task's output. The file appears whole at
    :meth:`finish`, or not at all."""

    def __init__(self, filing: Filing, storage: Storage, topic: str, partition: int) -> None:
        retention = filing.retention(topic)
        assert retention is not None, "a topic the filing does not take"
        self.topic, self.partition = topic, partition
        self._now = pa.scalar(filing.now_ms * 1000, TIMESTAMP)
        self._horizon = pa.scalar((filing.now_ms + retention) * 1000, TIMESTAMP)
        self._fs, root = storage.resolve(filing.table)
        # Spark's layout: a directory per value of the partition column.
        self.path = f"topic={topic}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        self._full = self._fs.join(root, *self.path.split("/"))
        self._file: Any = None
        self._writer: pq.ParquetWriter | None = None
        self._stats = Statistics(FILE_SCHEMA)
        self._first: int | None = None
        self._last = (-1, -1)  # offset, codec

    def take(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """Write the winners among ``rows`` (the task's reduced, classified records of the
        partition); the others, which stay the task's output."""
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
        self._writer.write_batch(written)
        self._stats.add(written)
        first = pc.min(rows.column("timestamp")).cast(pa.int64()).as_py() // 1000
        self._first = first if self._first is None else min(self._first, first)
        offsets = rows.column("offset")
        newest = pc.index(offsets, pc.max(offsets)).as_py()
        offset = offsets[newest].as_py()
        if offset > self._last[0]:
            self._last = (offset, rows.column("compression")[newest].as_py())

    def finish(self) -> FiledWinners | None:
        """The file, whole; None when no winner came."""
        if self._writer is None or self._first is None:
            return None
        self._writer.close()
        size = self._file.size
        if not self._file.publish():
            raise OSError(f"{self._full}: a file is there already")
        return FiledWinners(
            self.topic,
            self.partition,
            self.path,
            size,
            int(time.time() * 1000),
            self._stats.to_json(),
            self._stats.records,
            self._first,
            *self._last,
        )

    def discard(self) -> None:
        """Nothing written appears (the task failed)."""
        if self._file is not None:
            self._file.discard()


_COMPUTED = ("delete_horizon", "cleaned_at")


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
