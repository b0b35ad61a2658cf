"""A compacted topic's Kafka log for benchmarks: many keys, most updated many times.

One topic of ``partitions`` partitions in Kafka's log-dir layout (``<topic>-<p>/<20 digits>.log``
with ``.index`` and ``.timeindex``), segments rolled at ``segment_bytes``, lz4 batches of about
16 KiB before compression, JSON-like values of 100-200 bytes, 5% tombstones (null values) and a
trace header on a fifth of the records. Key ``k`` lives in partition ``k mod partitions``, as a
producer's partitioner keeps a key in one partition. Each partition first encodes every one of
its keys once in a random order, then as many random draws among them; the rest of the
partition repeats those batches at new base offsets (the base offset is outside the CRC), so
only a fraction of the records go through ``build_batch``. The generator tracks the last offset
of every key and keeps a sample of them as the expected state. Generated logs are cached.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter
from segcompact.storage import LocalOutputDirectory

MiB = 1 << 20
TOPIC = "e2e"
BATCH_BYTES = 16 << 10  # records section of a batch before compression
TOMBSTONE_RATE = 0.05
HEADER_RATE = 0.2
SAMPLE_KEYS = 1000  # keys whose expected offset the generator keeps
FORMAT_VERSION = 1  # bump when generation changes, to invalidate cached logs
BASE_TIMESTAMP = 1_700_000_000_000

_EVENTS = ("created", "updated", "address_changed", "plan_changed", "suspended", "reactivated")
_REGIONS = ("eu-west-1", "us-east-1", "ap-south-1", "sa-east-1")
_PLANS = ("free", "basic", "pro", "enterprise")


@dataclass(frozen=True, slots=True)
class Log:
    root: str  # the log dir: <root>/<topic>-<p>/<20 digits>.log
    topic: str
    partitions: int
    keys: int
    segments: int
    file_bytes: int  # .log files only
    records: int
    tombstones: int
    fresh_records: int  # encoded with build_batch; the rest repeat those batches
    generate_seconds: float  # when it was generated (a cached log is not regenerated)
    # (partition, key as latin-1 text, offset, tombstone) of a sample of keys: expected state.
    sample: list[tuple[int, str, int, bool]] = field(repr=False)
    cached: bool = False


def key_bytes(k: int) -> bytes:
    return b"customer-%09d" % k


def value_bytes(rng: random.Random, k: int) -> bytes:
    extra = ",".join(f'"tag-{rng.randrange(1000):03d}"' for _ in range(rng.randrange(0, 4)))
    return (
        f'{{"customer":"customer-{k:09d}","event":"{rng.choice(_EVENTS)}",'
        f'"plan":"{rng.choice(_PLANS)}","region":"{rng.choice(_REGIONS)}",'
        f'"balance":{rng.randrange(10_000_000) / 100:.2f},"session":"{rng.getrandbits(64):016x}",'
        f'"tags":[{extra}]}}'
    ).encode()


class _Roller:
    """Appends batches to a partition directory, rolling a new segment at ``segment_bytes``."""

    def __init__(self, directory: Path, segment_bytes: int) -> None:
        directory.mkdir(parents=True)
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.writer: SegmentWriter | None = None
        self.written = self.segments = 0

    def append(self, batch: bytes, base_offset: int) -> None:
        w = self.writer
        if w is None or (w.size and w.size + len(batch) > self.segment_bytes):
            if w is not None:
                w.close()
            w = self.writer = SegmentWriter(LocalOutputDirectory(self.directory), base_offset)
            self.segments += 1
        w.append(batch)
        self.written += len(batch)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


@dataclass(slots=True)
class _Template:
    data: bytes  # the encoded batch; its base offset is rewritten when it is repeated
    keys: list[int]
    tombstones: list[bool]


def _write_partition(
    rng: random.Random,
    directory: Path,
    partition: int,
    partitions: int,
    keys: int,
    target_bytes: int,
    segment_bytes: int,
) -> tuple[dict[int, tuple[int, bool]], dict[str, int]]:
    """One partition's log; returns the last (offset, tombstone) of each key, and counts."""
    own = list(range(partition, keys, partitions))
    order = own[:]
    rng.shuffle(order)  # every key once...
    order += [rng.choice(own) for _ in own]  # ...then as many updates, before any repeat
    roller = _Roller(directory, segment_bytes)
    templates: list[_Template] = []
    last: dict[int, tuple[int, bool]] = {}
    offset = tombstones = 0

    def emit(t: _Template) -> None:
        nonlocal offset, tombstones
        entry = bytearray(t.data)
        struct.pack_into(">q", entry, 0, offset)  # base offset: not covered by the CRC
        roller.append(bytes(entry), offset)
        offsets = range(offset, offset + len(t.keys))
        last.update(zip(t.keys, zip(offsets, t.tombstones, strict=True), strict=True))
        tombstones += sum(t.tombstones)
        offset += len(t.keys)

    i = 0
    while i < len(order):
        records: list[Record] = []
        batch_keys: list[int] = []
        size = 0
        while size < BATCH_BYTES and i < len(order):
            k = order[i]
            i += 1
            batch_keys.append(k)
            key = key_bytes(k)
            value = None if rng.random() < TOMBSTONE_RATE else value_bytes(rng, k)
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if rng.random() < HEADER_RATE:
                headers = (("trace-id", b"%032x" % rng.getrandbits(128)),)
            n = len(records)
            records.append(Record(n, BASE_TIMESTAMP + offset + n, key, value, headers))
            size += len(key) + len(value or b"") + 12 + sum(len(h) + 34 for h, _ in headers)
        t = _Template(
            build_batch(records, compression=Compression.LZ4),
            batch_keys,
            [r.value is None for r in records],
        )
        templates.append(t)
        emit(t)
    fresh = offset
    while roller.written < target_bytes:
        emit(templates[rng.randrange(len(templates))])
    roller.close()
    counts = {
        "file_bytes": roller.written,
        "segments": roller.segments,
        "records": offset,
        "tombstones": tombstones,
        "fresh_records": fresh,
    }
    return last, counts


def generate(
    workdir: Path,
    size_mib: float,
    partitions: int,
    keys: int,
    segment_mib: float,
    seed: int = 42,
) -> Log:
    """The cached log for these parameters, generated if missing."""
    name = f"log-{size_mib:g}MiB-{partitions}p-{keys}k-{segment_mib:g}seg-s{seed}-v{FORMAT_VERSION}"
    where = workdir / name
    root, meta = where / "logs", where / "meta.json"
    if meta.exists() and root.is_dir():
        return Log(**{**json.loads(meta.read_text()), "cached": True})
    if keys < partitions:
        raise ValueError(f"--keys {keys} must be at least --partitions {partitions}")
    shutil.rmtree(where, ignore_errors=True)
    start = time.perf_counter()
    rng = random.Random(seed)
    staging = where / "staging"
    per_partition = -(-int(size_mib * MiB) // partitions)
    totals: dict[str, int] = defaultdict(int)
    sample: list[tuple[int, str, int, bool]] = []
    picks = sorted(rng.sample(range(keys), min(SAMPLE_KEYS, keys)))
    for p in range(partitions):
        directory = staging / f"{TOPIC}-{p}"
        last, counts = _write_partition(
            rng, directory, p, partitions, keys, per_partition, int(segment_mib * MiB)
        )
        for name_, n in counts.items():
            totals[name_] += n
        for k in picks:
            if k % partitions == p:
                offset, dead = last[k]
                sample.append((p, key_bytes(k).decode("latin-1"), offset, dead))
        if len(last) != len(range(p, keys, partitions)):
            raise AssertionError(f"partition {p}: {len(last)} keys written")
    os.replace(staging, root)
    log = Log(
        root=str(root),
        topic=TOPIC,
        partitions=partitions,
        keys=keys,
        segments=totals["segments"],
        file_bytes=totals["file_bytes"],
        records=totals["records"],
        tombstones=totals["tombstones"],
        fresh_records=totals["fresh_records"],
        generate_seconds=time.perf_counter() - start,
        sample=sample,
    )
    info = asdict(log)
    del info["cached"]
    meta.write_text(json.dumps(info))
    return log


def log_files(log: Log) -> list[Path]:
    return sorted(Path(log.root).glob("*/*.log"))
