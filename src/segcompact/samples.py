"""Generated Kafka logs for the demo, tests and benchmarks: inputs for every strategy and
tombstone mode, out-of-order timestamps and versions, keyless records, transactions spanning
segments. Seeded, so a given ``random.Random`` gives the same log every time."""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.control import marker
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter
from segcompact.storage import LocalOutputDirectory

VERSION_HEADER = "v"
_LONG = struct.Struct(">q")


@dataclass
class SampleSegment:
    """A generated segment's encoded batches, with its base offset, not yet written."""

    base_offset: int
    batches: list[bytes] = field(default_factory=list)

    def write(self, directory: Path) -> Path:
        """Write it as ``<base offset>.log`` (and its indexes) into ``directory``."""
        with SegmentWriter(LocalOutputDirectory(directory), self.base_offset) as w:
            for b in self.batches:
                w.append(b)
        return directory / w.log_name


def generate_partition(
    rnd: random.Random,
    *,
    records: int = 120,
    keys: int = 12,
    per_batch: int = 6,
    batches_per_segment: int = 4,
    transactions: bool = False,
    codec: Compression = Compression.NONE,
    ordered_timestamps: bool = False,
    base_ms: int = 1_000_000,
) -> list[SampleSegment]:
    """A partition's log as segments, offsets dense from 0 (markers take offsets too).

    Record timestamps are out of order, within 50 s from ``base_ms``; ``ordered_timestamps``
    makes them ``base_ms`` + 100 ms per offset instead, as a log that is appended to over time.
    """
    segments: list[SampleSegment] = []
    offset = 0
    open_txn: int | None = None  # producer id of the transaction in progress
    next_pid = 1000
    while offset < records:
        if not segments or len(segments[-1].batches) >= batches_per_segment:
            segments.append(SampleSegment(offset))
        seg = segments[-1]
        if transactions and open_txn is not None and rnd.random() < 0.4:
            commit = rnd.random() < 0.6
            seg.batches.append(
                build_batch(
                    [marker(offset, commit, 5_000 + offset)],
                    is_control=True,
                    is_transactional=True,
                    producer_id=open_txn,
                    producer_epoch=0,
                )
            )
            offset += 1
            open_txn = None
            continue
        if transactions and open_txn is None and rnd.random() < 0.3:
            open_txn = next_pid
            next_pid += 1
        batch = []
        for _ in range(per_batch):
            batch.append(_record(rnd, offset, keys, ordered_timestamps, base_ms))
            offset += 1
        seg.batches.append(
            build_batch(
                batch,
                compression=codec,
                is_transactional=open_txn is not None,
                producer_id=open_txn if open_txn is not None else -1,
                producer_epoch=0 if open_txn is not None else -1,
                base_sequence=0 if open_txn is not None else -1,
            )
        )
    return segments


def _record(
    rnd: random.Random, offset: int, keys: int, ordered_timestamps: bool, base_ms: int
) -> Record:
    key = None if rnd.random() < 0.03 else b"key-%d" % rnd.randrange(keys)
    value = None if rnd.random() < 0.15 else b"value-%d" % offset
    headers: list[tuple[str, bytes | None]] = []
    roll = rnd.random()
    if roll < 0.6:
        headers.append((VERSION_HEADER, _LONG.pack(rnd.randrange(-5, 40))))
    elif roll < 0.65:
        headers.append((VERSION_HEADER, b"bad"))  # not 8 bytes: counts as absent
    if rnd.random() < 0.1:
        headers.append(("tombstone", rnd.choice([b"true", b"1", b"\x01", b"no"])))
    if rnd.random() < 0.2:
        headers.append(("trace", None))
    # Out of order on purpose, unless asked for a log appended to over time.
    ts = base_ms + (100 * offset if ordered_timestamps else rnd.randrange(0, 50_000))
    return Record(offset, ts, key, value, tuple(headers), 1 if rnd.random() < 0.1 else 0)
