"""One topic of many small partitions, written by segcompact's own encoder (``build_batch`` and
``SegmentWriter``), not by a broker: a broker would take hours to create and fill 16,384
partitions on a small machine.

Each partition of ``<root>/<topic>-<p>`` holds segments of ``records`` lz4 records each (cut
into batches of about 16 KiB before compression, as Java's producer cuts them), keys drawn
among the partition's ``keys`` (key ``k`` lives in partition ``k mod partitions``, as a
producer's partitioner keeps a key in one partition), JSON-like values of 100-200 bytes
(``keyed_log.py``'s), a ``tombstones`` share of null values, and after them an empty active
segment. :meth:`SmallPartitions.roll` fills the active segment and opens a new empty one: a new
rolled segment in every partition. Every segment is drawn from its own seed, so the log is the
same whatever order it is written in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter, segment_name
from segcompact.storage import LocalOutputDirectory
from tests.support.keyed_log import BASE_TIMESTAMP, BATCH_BYTES, key_bytes, value_bytes

RECORD_OVERHEAD = 12  # bytes a record takes beside its key and value, about
SUFFIXES = (".log", ".index", ".timeindex")


@dataclass(frozen=True, slots=True)
class SmallPartitions:
    """The log's shape; :meth:`write` and :meth:`roll` put it on disk under ``root``."""

    root: Path
    topic: str
    partitions: int
    records: int  # per segment
    keys: int  # per partition
    tombstones: float  # share of null values
    seed: int
    first: int = 0  # the first partition's number: two shapes can share a topic

    @property
    def numbers(self) -> range:
        """The partitions' numbers."""
        return range(self.first, self.first + self.partitions)

    def directory(self, partition: int) -> Path:
        return self.root / f"{self.topic}-{partition}"

    def write(self, rolled: int) -> None:
        """``rolled`` segments in every partition, then an empty active one."""
        for p in self.numbers:
            self.directory(p).mkdir(parents=True)
            for segment in range(rolled):
                self._segment(p, segment)
            self._empty(p, rolled * self.records)

    def roll(self, rolled: int) -> None:
        """Every partition's active segment (after ``rolled`` rolled ones) filled, and a new
        empty active segment after it."""
        for p in self.numbers:
            for suffix in SUFFIXES:  # the empty active segment, written again full
                (self.directory(p) / segment_name(rolled * self.records, suffix)).unlink()
            self._segment(p, rolled)
            self._empty(p, (rolled + 1) * self.records)

    def _segment(self, partition: int, segment: int) -> None:
        rng = random.Random(f"{self.seed}/{partition}/{segment}")
        first = segment * self.records
        records: list[Record] = []
        batch_bytes = 0
        with SegmentWriter(LocalOutputDirectory(self.directory(partition)), first) as writer:
            for offset in range(first, first + self.records):
                k = rng.randrange(self.keys) * self.partitions + partition
                value = None if rng.random() < self.tombstones else value_bytes(rng, k)
                key = key_bytes(k)
                records.append(Record(offset, BASE_TIMESTAMP + offset, key, value))
                batch_bytes += len(key) + len(value or b"") + RECORD_OVERHEAD
                if batch_bytes >= BATCH_BYTES:
                    writer.append(build_batch(records, compression=Compression.LZ4))
                    records, batch_bytes = [], 0
            if records:
                writer.append(build_batch(records, compression=Compression.LZ4))

    def _empty(self, partition: int, base_offset: int) -> None:
        SegmentWriter(LocalOutputDirectory(self.directory(partition)), base_offset).close()
