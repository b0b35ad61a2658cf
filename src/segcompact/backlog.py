"""What a ``run --once`` has to read, and how far through it each micro-batch is.

The segments after the query's last committed micro-batch, from the source's manifest and the
query's offset log: Spark's checkpoint keeps ``offsets/<batch>`` ("v1", the batch's metadata,
then one line per source, the ``kafka-segments`` source's being ``{"seq": n, "manifest": id}``)
from when a batch is planned, and ``commits/<batch>`` from when it is done.
"""

from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING

from segcompact.manifest import Manifest, seq_of
from segcompact.storage import FileSystem, Storage

if TYPE_CHECKING:
    from segcompact.config import CompactorConfig


def manifest_dir(config: CompactorConfig) -> str:
    """The source's segment manifest lives beside the query's checkpoint."""
    return posixpath.join(config.stream.checkpoint, "manifest")


def query_dir(config: CompactorConfig) -> str:
    """The streaming query's own checkpoint (offsets, commits), beside the manifest."""
    return posixpath.join(config.stream.checkpoint, "query")


class QueryLog:
    """The offset and commit logs of a streaming query's checkpoint (``<checkpoint>/query``)."""

    def __init__(self, location: str, storage: Storage) -> None:
        self.fs: FileSystem
        self.fs, self.location = storage.resolve(location)

    def batches(self, kind: str) -> list[int]:
        """The micro-batches with a file in ``kind`` (``offsets``: planned, ``commits``: done),
        in order."""
        folder = self.fs.join(self.location, kind)
        if not self.fs.exists(folder):
            return []
        return sorted(int(f.name) for f in self.fs.list_dir(folder) if f.name.isdigit())

    def last_commit(self) -> int | None:
        """The last micro-batch that finished; None before the first."""
        return max(self.batches("commits"), default=None)

    def last_planned(self) -> int | None:
        """The last micro-batch whose offsets were written; None before the first."""
        return max(self.batches("offsets"), default=None)

    def end_seq(self, batch: int) -> int:
        """The source seq a planned micro-batch ends at (its segments' last)."""
        lines = self.fs.read_bytes(self.fs.join(self.location, "offsets", str(batch))).splitlines()
        return seq_of(json.loads(lines[2]))


class Backlog:
    """The segments a query has not finished: ``total`` bytes; :meth:`done`, the bytes of them
    up to where a micro-batch ends."""

    def __init__(self, manifest: Manifest, query: QueryLog) -> None:
        self.manifest = manifest
        self.query = query
        committed = query.last_commit()
        self.start = 0 if committed is None else query.end_seq(committed)
        self.total = sum(e.file.size for e in manifest.entries()[self.start :])
        # A batch planned and not committed (a run stopped in it) is read again first.
        self.in_flight = query.last_planned() != committed

    @property
    def empty(self) -> bool:
        """Nothing for the query to do: no segment after its last batch, none half done."""
        return self.start == self.manifest.latest_seq and not self.in_flight

    def done(self, batch: int) -> int:
        """The bytes of the segments from the backlog's start to the end of ``batch``."""
        return sum(
            e.file.size for e in self.manifest.between(self.start, self.query.end_seq(batch))
        )
