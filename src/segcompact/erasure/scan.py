"""The scan behind ``segcompact verify-erasure``: every copy of one key segcompact still holds.

It owns looking for one topic-partition's key in everything segcompact writes: the Delta
tables' whole directory trees (the live snapshot's data files, files removed from it but not
vacuumed, ``_change_data/``, the log and its checkpoints), every output version (published and
staged), and other directories given (the streaming checkpoint, the source manifest). The
source segments are read too but reported apart: they are not segcompact's to erase.

Parquet files and segments are decoded, not searched: Parquet pages (snappy) and Kafka batches
(LZ4, zstd, gzip, snappy) are compressed, and a compressed copy of a key or value does not show
in a file's raw bytes. Parquet goes through pyarrow (only the topic, partition, key and offset
columns of data files); segments through segcompact's codec. Every other file is searched byte
for byte, which cannot see into compressed files of other formats.

Symlinks are not followed (the published ``<topic>-<partition>`` links into ``.versions``, which
is scanned itself). A file gone during the scan is skipped: it is erased. A file that cannot be
read is a finding of kind ``unreadable``: nothing can be proved about it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from segcompact.errors import CorruptBatchError
from segcompact.format.segment import SegmentReader
from segcompact.storage import FileSystem, Storage

Kind = Literal["table", "output", "raw", "upstream", "unreadable"]

RAW_MIN_KEY_BYTES = 4  # a shorter key matches noise in any file's bytes
SEGMENT_SUFFIXES = (".log", ".log.cleaned", ".log.swap", ".log.deleted")
_KEY_COLUMNS = ("topic", "partition", "key")
_CHUNK = 8 << 20
_PARQUET_BATCH = 64 * 1024
_DECODE_ERRORS = (CorruptBatchError, pa.ArrowException, ValueError)
_STRING_TYPES: tuple[Callable[[Any], bool], ...] = (
    pa.types.is_binary,
    pa.types.is_large_binary,
    pa.types.is_fixed_size_binary,
    pa.types.is_string,
    pa.types.is_large_string,
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One place that holds the key: ``offset`` is its record's when known."""

    kind: Kind
    location: str
    offset: int | None
    detail: str


@dataclass(slots=True)
class ScanResult:
    """``found``: every copy segcompact holds besides the live value; ``upstream``: the source's."""

    found: list[Finding] = field(default_factory=list)
    upstream: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The source segments decoded to their end: where ``upstream`` names none, none holds the key.
    read_whole: set[str] = field(default_factory=set)


def scan_for_key(
    *,
    tables: Sequence[str],
    outputs: Sequence[str],
    others: Sequence[str],
    sources: Sequence[str],
    topic: str,
    partition: int,
    key: bytes,
    live_offsets: Collection[int],
    include_live: bool = False,
    storage: Storage | None = None,
) -> ScanResult:
    """Every copy of ``key`` of ``topic``-``partition`` under the directories given.

    Findings whose offset is in ``live_offsets`` (the key's live value) are left out unless
    ``include_live``; raw hits have no offset and always count.
    """
    scan = _Scan(topic, partition, key, frozenset(live_offsets), include_live, storage or Storage())
    result = scan.result
    if not scan.raw:
        result.notes.append(
            f"the key is {len(key)} bytes (under {RAW_MIN_KEY_BYTES}): files were not searched "
            "byte for byte, only Parquet rows and segment records were compared"
        )
    for root in tables:
        for path in scan.files(root, result.found):
            if path.endswith(".parquet"):
                scan.guard(result.found, scan.parquet, path)
            else:
                scan.guard(result.found, scan.raw_file, path, "table file")
    for root in outputs:
        for path in scan.files(root, result.found):
            parts = _below(path, root)[:-1]
            if path.endswith(SEGMENT_SUFFIXES):
                if scan.dir_name in parts:
                    what = _version(parts[len(parts) - parts[::-1].index(scan.dir_name) :])
                    scan.guard(result.found, scan.segment, path, "output", what)
            else:
                scan.guard(result.found, scan.raw_file, path, "output file")
    for root in others:
        for path in scan.files(root, result.found):
            scan.guard(result.found, scan.raw_file, path, "file")
    for root in sources:
        for path in scan.files(f"{root.rstrip('/')}/{scan.dir_name}", result.upstream, note=False):
            if path.endswith(SEGMENT_SUFFIXES):
                scan.guard(result.upstream, scan.segment, path, "upstream", "source segment")
    return result


def _below(path: str, root: str) -> list[str]:
    """The names of ``path`` below ``root``."""
    return path[len(root.rstrip("/")) :].strip("/").split("/")


def _version(below: list[str]) -> str:
    """``output version v3`` from the directories below ``<topic>-<partition>``."""
    name = below[0] if below else ""
    staged = "staged " if name.endswith(".tmp") else ""
    return f"{staged}output version {name.removesuffix('.tmp')}" if name else "output"


def _string_leaves(array: Any, name: str) -> Iterator[tuple[str, Any]]:
    """The string and binary arrays inside ``array``, through structs, lists and maps."""
    t = array.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _string_leaves(array.field(i), f"{name}.{t.field(i).name}")
    elif pa.types.is_map(t):
        yield from _string_leaves(array.keys, f"{name}.key")
        yield from _string_leaves(array.items, f"{name}.value")
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _string_leaves(array.flatten(), name)
    elif pa.types.is_dictionary(t):
        yield from _string_leaves(array.dictionary, name)
    elif any(is_type(t) for is_type in _STRING_TYPES):
        yield name, array


class _Scan:
    def __init__(
        self,
        topic: str,
        partition: int,
        key: bytes,
        live: frozenset[int],
        include_live: bool,
        storage: Storage,
    ) -> None:
        self.storage = storage
        self.topic = topic
        self.partition = partition
        self.key = key
        self.live = live
        self.include_live = include_live
        self.dir_name = f"{topic}-{partition}"
        self.raw = len(key) >= RAW_MIN_KEY_BYTES
        self.result = ScanResult()

    def add(
        self, into: list[Finding], kind: Kind, path: str, offset: int | None, detail: str
    ) -> None:
        if offset is None or offset not in self.live or self.include_live:
            into.append(Finding(kind, path, offset, detail))

    def files(self, root: str, into: list[Finding], *, note: bool = True) -> Iterator[str]:
        """The regular files under ``root`` (or ``root`` itself), in name order."""
        fs, path = self.storage.resolve(root)
        if not fs.exists(path):
            if note:
                self.result.notes.append(f"{root}: does not exist, nothing there to scan")
            return

        def error(e: OSError) -> None:
            self.add(into, "unreadable", e.filename or root, None, f"cannot be listed: {e}")

        yield from fs.walk_files(path, error)

    def guard(self, into: list[Finding], scan: Callable[..., None], path: str, *args: str) -> None:
        """``scan(path, *args)``, a file gone meanwhile skipped and an unreadable one a finding."""
        try:
            scan(path, *args)
        except FileNotFoundError:
            pass  # gone during the scan
        except OSError as e:
            self.add(into, "unreadable", path, None, f"cannot be read: {e}")

    def contains(self, path: str) -> bool:
        tail = b""
        stream = self._fs(path).input_file(path).open()
        try:
            while chunk := stream.read(_CHUNK):
                data = tail + chunk
                if self.key in data:
                    return True
                tail = data[1 - len(self.key) :]
        finally:
            stream.close()
        return False

    def _fs(self, path: str) -> FileSystem:
        return self.storage.filesystem(path)

    def raw_file(self, path: str, what: str) -> None:
        if self.raw and self.contains(path):
            self.add(self.result.found, "raw", path, None, f"{what}: its bytes hold the key")

    def undecodable(self, path: str, into: list[Finding], what: str, error: Exception) -> None:
        if self.raw and self.contains(path):
            detail = f"{what} does not decode ({error}); its raw bytes hold the key"
            self.add(into, "raw", path, None, detail)
        elif into is self.result.found:
            # A compressed part that does not decode may still hold the key: no proof.
            self.add(into, "unreadable", path, None, f"{what} does not decode ({error})")
        else:
            why = "its raw bytes do not hold the key" if self.raw else "the key is too short"
            self.result.notes.append(f"{path}: {what} does not decode ({error}); {why}")

    def segment(self, path: str, kind: Kind, what: str) -> None:
        into = self.result.upstream if kind == "upstream" else self.result.found
        try:
            for batch in SegmentReader(self._fs(path).input_file(path), verify_crc=False):
                if batch.is_control:
                    continue
                for r in batch.iter_records():  # a batch of millions: one record at a time
                    if r.key == self.key:
                        value = "tombstone" if r.value is None else f"value of {len(r.value)} bytes"
                        self.add(into, kind, path, r.offset, f"{what}, {value}")
        except _DECODE_ERRORS as e:
            self.undecodable(path, into, what, e)
            return
        if kind == "upstream":
            self.result.read_whole.add(path)

    def parquet(self, path: str) -> None:
        parts = path.split("/")
        what = "Delta log checkpoint" if "_delta_log" in parts else "table data file"
        what = "change data file" if "_change_data" in parts else what
        try:
            with self._fs(path).open_seekable(path) as f, pq.ParquetFile(f) as pf:
                names = set(pf.schema_arrow.names)
                if set(_KEY_COLUMNS) <= names:
                    self._rows(pf, path, f"{what} (Parquet)", "offset" in names)
                elif self.raw:
                    self._strings(pf, path, f"{what} (Parquet)")
        except OSError as e:
            if e.errno is not None:
                raise
            self.undecodable(path, self.result.found, f"{what} (Parquet)", e)
        except _DECODE_ERRORS as e:
            self.undecodable(path, self.result.found, f"{what} (Parquet)", e)

    def _rows(self, pf: Any, path: str, what: str, has_offset: bool) -> None:
        columns = [*_KEY_COLUMNS, "offset"] if has_offset else list(_KEY_COLUMNS)
        wanted = pa.scalar(self.key, pa.binary())
        for batch in pf.iter_batches(batch_size=_PARQUET_BATCH, columns=columns):
            keys = batch.column("key")
            if keys.type != pa.binary():
                keys = keys.cast(pa.binary())
            where = pc.and_(
                pc.and_(
                    pc.equal(batch.column("topic"), self.topic),
                    pc.equal(batch.column("partition"), self.partition),
                ),
                pc.equal(keys, wanted),
            )
            hits = batch.filter(where)
            for i in range(hits.num_rows):
                offset = hits.column("offset")[i].as_py() if has_offset else None
                row = f"row of offset {offset}" if has_offset else "a row"
                self.add(self.result.found, "table", path, offset, f"{what}, {row}")

    def _strings(self, pf: Any, path: str, what: str) -> None:
        """A Parquet file without the key columns: its decoded strings searched for the key."""
        for batch in pf.iter_batches(batch_size=_PARQUET_BATCH):
            for column, array in zip(batch.schema.names, batch.columns, strict=True):
                for name, leaf in _string_leaves(array, column):
                    data = leaf.buffers()[-1]
                    if data is None or self.key not in data.to_pybytes():
                        continue  # the values' bytes, end to end: a fast first look
                    values = (v.encode() if isinstance(v, str) else v for v in leaf.to_pylist())
                    if any(v is not None and self.key in v for v in values):
                        detail = f"{what}: column {name} holds the key's bytes"
                        self.add(self.result.found, "raw", path, None, detail)
                        return
