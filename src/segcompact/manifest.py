"""The manifest that numbers the segments a source has handed out.

The manifest is a durable, append-only log of every segment a source has handed out, like the
metadata log of Spark's file stream source: a directory of numbered JSON files (``0.json``,
``1.json``, …), one per discovery run that found something new. Every entry has a sequence
number (``seq``, dense from 1) that never changes once written, so a streaming offset
``{"seq": N}`` means "the first N segments of the manifest" across restarts. No Spark here.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from segcompact.discovery import SegmentFile, by_turns, discover
from segcompact.errors import SourceError
from segcompact.storage import FileSystem, Storage

_MANIFEST_FILE = re.compile(r"^(?P<batch>[0-9]+)\.json$")
_MANIFEST_VERSION = 1
_APPEND_ATTEMPTS = 16


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A segment file with the sequence number the manifest gave it."""

    seq: int
    file: SegmentFile

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, **asdict(self.file)}  # flat, as manifests have always been

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ManifestEntry:
        return cls(
            int(data["seq"]),
            SegmentFile(
                topic=str(data["topic"]),
                partition=int(data["partition"]),
                base_offset=int(data["base_offset"]),
                path=str(data["path"]),
                size=int(data["size"]),
            ),
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

    def __init__(
        self, directory: str, storage: Storage | None = None, fs: FileSystem | None = None
    ) -> None:
        """The manifest in ``directory``; ``storage`` opens it and the roots it discovers,
        ``fs`` (tests) replaces the manifest's own file system."""
        self.storage = storage or Storage()
        if fs is None:
            fs, directory = self.storage.resolve(directory)
        self.directory = fs.abspath(directory)
        self.fs = fs
        self._entries: list[ManifestEntry] = []
        self._paths: set[str] = set()
        self._next_batch = 0
        self._id: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Shipped to Spark tasks with the reader: the cache is rebuilt on demand, not pickled.
        return {"directory": self.directory, "storage": self.storage, "fs": self.fs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["directory"], state["storage"], state["fs"])  # type: ignore[misc]

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
        path = self.fs.join(self.directory, f"{batch}.json")
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
        self._paths.update(e.file.path for e in entries)
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

    def append(self, segments: Iterable[SegmentFile]) -> list[ManifestEntry]:
        """Add the segments not yet in the manifest as one new file, a partition at a time in
        turn (:func:`~segcompact.discovery.by_turns`), each partition's in the given order.

        Returns the entries added (empty when nothing was new; no file is written then).
        """
        candidates = list(segments)
        for _ in range(_APPEND_ATTEMPTS):
            self.refresh()
            new = by_turns(s for s in dict.fromkeys(candidates) if s.path not in self._paths)
            if not new:
                return []
            first = len(self._entries) + 1
            entries = [ManifestEntry(first + i, s) for i, s in enumerate(new)]
            manifest_id = self._id or uuid.uuid4().hex
            doc = {
                "version": _MANIFEST_VERSION,
                "manifest": manifest_id,
                "entries": [e.to_json() for e in entries],
            }
            data = (json.dumps(doc, indent=None, separators=(",", ":")) + "\n").encode()
            self.fs.makedirs(self.directory)
            batch = self._next_batch
            if self.fs.create_exclusive(self.fs.join(self.directory, f"{batch}.json"), data):
                self._entries.extend(entries)
                self._paths.update(e.file.path for e in entries)
                self._next_batch = batch + 1
                self._id = manifest_id
                return entries
            # Another writer published this number first: read it and try again.
        raise SourceError(f"manifest {self.directory}: gave up after {_APPEND_ATTEMPTS} races")

    def discover(self, roots: Iterable[str], *, rolled_only: bool = True) -> list[ManifestEntry]:
        """Run discovery and append what it found that is new; returns the new entries."""
        return self.append(discover(roots, rolled_only=rolled_only, storage=self.storage))
