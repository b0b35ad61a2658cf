"""Finding segment files under Kafka log-dir roots, and the manifest that numbers them.

Discovery lists ``<root>/<topic>-<partition>/<20-digit base offset>.log`` files. The manifest
is a durable, append-only log of every segment a source has handed out, like the metadata log
of Spark's file stream source: a directory of numbered JSON files (``0.json``, ``1.json``, …),
one per discovery run that found something new. Every entry has a sequence number (``seq``,
dense from 1) that never changes once written, so a streaming offset ``{"seq": N}`` means "the
first N segments of the manifest" across restarts.

Only local (POSIX) paths are implemented; all file access goes through the small
:class:`FileSystem` protocol so that Hadoop or object-store paths can be added later behind it.
No Spark here.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from segcompact.errors import SegcompactError
from segcompact.format.batch import LOG_OVERHEAD, MAGIC_OFFSET

# ``<topic>-<partition>``: the partition is the digits after the last '-'. Directories Kafka
# leaves behind (``t-0.<uuid>-delete``, ``-future``, ``-stray``) end in letters and are skipped.
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>[0-9]+)$")
_SEGMENT_FILE = re.compile(r"^(?P<base>[0-9]{20})\.log$")
_MANIFEST_FILE = re.compile(r"^(?P<batch>[0-9]+)\.json$")
_MAX_PARTITION = 0x7FFFFFFF
_MANIFEST_VERSION = 1
_APPEND_ATTEMPTS = 16
# v2 batches: lastOffsetDelta (int32) follows magic, crc and attributes.
_LAST_OFFSET_DELTA_AT = 23


class SourceError(SegcompactError):
    """Raised when a source root is missing or the manifest is unreadable or inconsistent."""


# --- file system seam -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One directory entry: its name, full path, kind and size in bytes (0 for directories)."""

    name: str
    path: str
    is_dir: bool
    size: int


class FileSystem(Protocol):
    """What discovery and the manifest need from storage."""

    def abspath(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[FileInfo]: ...

    def read_bytes(self, path: str) -> bytes: ...

    def makedirs(self, path: str) -> None: ...

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Publish ``data`` at ``path`` atomically; False (and nothing written) if it exists."""
        ...


class LocalFileSystem:
    """Local POSIX files through ``os``."""

    def abspath(self, path: str) -> str:
        return os.path.abspath(os.path.expanduser(path))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        out = []
        with os.scandir(path) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir()
                    size = 0 if is_dir else entry.stat().st_size
                except FileNotFoundError:
                    continue  # deleted while listing (retention, cleaner swap)
                out.append(FileInfo(entry.name, entry.path, is_dir, size))
        return out

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            # A hard link publishes the complete file and, unlike os.replace, fails when a
            # concurrent writer got there first; where links are not supported, os.replace
            # is still atomic, only not exclusive.
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError:
                if os.path.exists(path):
                    return False
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(directory)
        return True


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


LOCAL = LocalFileSystem()


# --- discovery ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment file found by discovery."""

    topic: str
    partition: int
    base_offset: int
    path: str
    size: int

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.topic, self.partition, self.base_offset, self.path)


# KRaft's metadata log sits in a broker's log dir like a partition but is not a topic.
_INTERNAL_LOGS = frozenset({"__cluster_metadata"})


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``("orders", 3)`` for ``orders-3``; None for a name that is not a partition directory."""
    m = _PARTITION_DIR.match(name)
    if m is None:
        return None
    partition = int(m["partition"])
    if partition > _MAX_PARTITION or m["topic"] in _INTERNAL_LOGS:
        return None
    return m["topic"], partition


def parse_segment_name(name: str) -> int | None:
    """The base offset of ``<20 digits>.log``; None for any other file name."""
    m = _SEGMENT_FILE.match(name)
    return int(m["base"]) if m else None


def discover(
    roots: Iterable[str], *, rolled_only: bool = True, fs: FileSystem = LOCAL
) -> list[Segment]:
    """Every eligible segment under ``roots``, sorted by topic, partition, base offset, path.

    With ``rolled_only`` the segment with the highest base offset in each partition directory is
    the active one (still being appended to) and is left out until a newer one appears.
    A root that does not exist raises :class:`SourceError`.
    """
    found: list[Segment] = []
    for root in roots:
        root = fs.abspath(root)
        if not fs.exists(root):
            raise SourceError(f"source root {root} does not exist")
        for entry in fs.list_dir(root):
            parsed = parse_partition_dir(entry.name) if entry.is_dir else None
            if parsed is None:
                continue
            topic, partition = parsed
            segments = [
                Segment(topic, partition, base, f.path, f.size)
                for f in _list_or_empty(fs, entry.path)
                if not f.is_dir and (base := parse_segment_name(f.name)) is not None
            ]
            if rolled_only and segments:
                active = max(segments, key=lambda s: s.base_offset)
                segments = [s for s in segments if s is not active]
            found.extend(segments)
    found.sort(key=lambda s: s.sort_key)
    return found


def _list_or_empty(fs: FileSystem, path: str) -> list[FileInfo]:
    try:
        return fs.list_dir(path)
    except FileNotFoundError:
        return []  # partition deleted while listing


# --- manifest -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A segment with the sequence number the manifest gave it."""

    seq: int
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ManifestEntry:
        return cls(
            seq=int(data["seq"]),
            topic=str(data["topic"]),
            partition=int(data["partition"]),
            base_offset=int(data["base_offset"]),
            path=str(data["path"]),
            size=int(data["size"]),
        )


def offset_of(seq: int, manifest_id: str | None = None) -> dict[str, Any]:
    """The streaming offset for "the first ``seq`` entries of manifest ``manifest_id``".

    ``{"seq": N, "manifest": id}``; the id (absent while the manifest is empty) lets a restart
    notice that the manifest its checkpoint counted in was deleted or replaced.
    """
    return {"seq": seq} if manifest_id is None else {"seq": seq, "manifest": manifest_id}


def seq_of(offset: Mapping[str, Any]) -> int:
    """The sequence number in a streaming offset ``{"seq": N}``."""
    seq = offset.get("seq") if isinstance(offset, Mapping) else None
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise SourceError(f"not a kafka-segments offset: {offset!r} (expected {{'seq': N}})")
    return seq


def manifest_id_of(offset: Mapping[str, Any]) -> str | None:
    """The manifest id in a streaming offset, None when it has none."""
    value = offset.get("manifest")
    return None if value is None else str(value)


class Manifest:
    """The append-only manifest in one directory.

    Entries already read are cached; each access reads only the files added since. Writers
    never overwrite: a numbered file is published with an exclusive atomic create, and a writer
    that loses a race re-reads and tries the next number, so concurrent queries sharing a
    manifest agree on every seq.
    """

    def __init__(self, directory: str, fs: FileSystem = LOCAL) -> None:
        self.directory = fs.abspath(directory)
        self.fs = fs
        self._entries: list[ManifestEntry] = []
        self._paths: set[str] = set()
        self._next_batch = 0
        self._id: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Spark tasks with the reader: the cache is rebuilt on demand, not pickled.
        return {"directory": self.directory, "fs": self.fs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["directory"], state["fs"])  # type: ignore[misc]

    def refresh(self) -> None:
        """Read the numbered files written since the last refresh (by anyone)."""
        if not self.fs.exists(self.directory):
            return
        batches = sorted(
            int(m["batch"])
            for f in self.fs.list_dir(self.directory)
            if not f.is_dir and (m := _MANIFEST_FILE.match(f.name))
        )
        for batch in batches:
            if batch < self._next_batch:
                continue
            if batch != self._next_batch:
                raise SourceError(
                    f"manifest {self.directory}: file {batch}.json follows "
                    f"{self._next_batch - 1}.json (files are missing)"
                )
            self._load(batch)

    def _load(self, batch: int) -> None:
        path = os.path.join(self.directory, f"{batch}.json")
        try:
            doc = json.loads(self.fs.read_bytes(path))
            if doc.get("version") != _MANIFEST_VERSION:
                raise SourceError(
                    f"manifest {path}: version {doc.get('version')!r}, expected {_MANIFEST_VERSION}"
                )
            entries = [ManifestEntry.from_json(e) for e in doc["entries"]]
            manifest_id = str(doc["manifest"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise SourceError(f"manifest {path}: unreadable ({e})") from None
        if self._id is not None and manifest_id != self._id:
            raise SourceError(
                f"manifest {path}: belongs to manifest {manifest_id}, not {self._id} "
                "(files of two manifests were mixed)"
            )
        expected = len(self._entries) + 1
        for i, entry in enumerate(entries):
            if entry.seq != expected + i:
                raise SourceError(
                    f"manifest {path}: seq {entry.seq} where {expected + i} was expected"
                )
        self._id = manifest_id
        self._entries.extend(entries)
        self._paths.update(e.path for e in entries)
        self._next_batch = batch + 1

    @property
    def id(self) -> str | None:
        """A random id the first file fixed (None while the manifest is empty)."""
        return self._id

    @property
    def latest_seq(self) -> int:
        """The highest seq known (0 when empty); call :meth:`refresh` first to see others'."""
        return len(self._entries)

    def entries(self) -> Sequence[ManifestEntry]:
        self.refresh()
        return tuple(self._entries)

    def between(self, start: int, end: int) -> list[ManifestEntry]:
        """The entries with ``start < seq <= end``; raises if the manifest has fewer than end."""
        if end > len(self._entries):
            self.refresh()
        if end > len(self._entries):
            raise SourceError(
                f"manifest {self.directory} has {len(self._entries)} segments, but seq {end} "
                "was asked for: the manifest was deleted or replaced after the checkpoint "
                "recorded it (delete the checkpoint too, or restore the manifest)"
            )
        return self._entries[max(start, 0) : max(end, start, 0)]

    def check(self, offset: Mapping[str, Any]) -> int:
        """The seq of a streaming offset, checked against this manifest.

        Raises :class:`SourceError` when the offset counts in another manifest or beyond this
        one's end: the manifest was deleted, replaced or moved while the checkpoint was kept.
        """
        seq = seq_of(offset)
        expected = manifest_id_of(offset)
        if seq > len(self._entries) or (expected is not None and expected != self._id):
            self.refresh()
        if seq > len(self._entries) or (expected is not None and expected != self._id):
            raise SourceError(
                f"the checkpoint is at segment {seq} of manifest {expected}, but manifest "
                f"{self.directory} is {self._id} with {len(self._entries)} segments: it was "
                "deleted, replaced or moved (restore it or set option manifest to where it is, "
                "or delete the checkpoint to start over)"
            )
        return seq

    def append(self, segments: Iterable[Segment]) -> list[ManifestEntry]:
        """Add the segments not yet in the manifest, in the given order, as one new file.

        Returns the entries added (empty when nothing was new; no file is written then).
        """
        candidates = list(segments)
        for _ in range(_APPEND_ATTEMPTS):
            self.refresh()
            new = [s for s in dict.fromkeys(candidates) if s.path not in self._paths]
            if not new:
                return []
            first = len(self._entries) + 1
            entries = [
                ManifestEntry(first + i, s.topic, s.partition, s.base_offset, s.path, s.size)
                for i, s in enumerate(new)
            ]
            manifest_id = self._id or uuid.uuid4().hex
            doc = {
                "version": _MANIFEST_VERSION,
                "manifest": manifest_id,
                "entries": [e.to_json() for e in entries],
            }
            data = (json.dumps(doc, indent=None, separators=(",", ":")) + "\n").encode()
            self.fs.makedirs(self.directory)
            batch = self._next_batch
            if self.fs.create_exclusive(os.path.join(self.directory, f"{batch}.json"), data):
                self._entries.extend(entries)
                self._paths.update(e.path for e in entries)
                self._next_batch = batch + 1
                self._id = manifest_id
                return entries
            # Another writer published this number first: read it and try again.
        raise SourceError(f"manifest {self.directory}: gave up after {_APPEND_ATTEMPTS} races")

    def discover(self, roots: Iterable[str], *, rolled_only: bool = True) -> list[ManifestEntry]:
        """Run discovery and append what it found that is new; returns the new entries."""
        return self.append(discover(roots, rolled_only=rolled_only, fs=self.fs))


# --- segment summary ------------------------------------------------------------------------


def last_offset(path: str | os.PathLike[str], end: int) -> int:
    """The last offset of the last batch starting before byte ``end``; -1 if there is none.

    Reads only batch headers, so empty batches (a v2 batch with no records still spans
    offsets) count. ``end`` must be a batch boundary already validated by a full read: this
    trusts the lengths it finds.
    """
    last = -1
    position = 0
    head_size = _LAST_OFFSET_DELTA_AT + 4
    with open(path, "rb", buffering=0) as f:
        fd = f.fileno()
        while position < end:
            head = os.pread(fd, head_size, position)
            if len(head) < LOG_OVERHEAD.size + 5:
                break
            base, length = LOG_OVERHEAD.unpack_from(head)
            if head[MAGIC_OFFSET] == 2 and len(head) == head_size:
                last = base + int.from_bytes(head[_LAST_OFFSET_DELTA_AT:], "big", signed=True)
            else:
                last = base  # v0/v1: a wrapper's offset is that of its last inner message
            position += LOG_OVERHEAD.size + length
    return last
