"""Decode throughput: segcompact to Arrow beside kafka-python and the decompress + CRC floor.

    python -m tests.benchmarks.decode --size-mib 256 [--codec lz4 --codec none]

For each codec a segment of about ``--size-mib`` MiB is generated once and cached under
``--dir``: ~16 KiB batches (before compression) of JSON-like 100-200 byte values with 16-32
byte keys, a header or two on some records. A few hundred distinct batches are generated and
repeated at new base offsets (the base offset is outside the CRC), which keeps generation fast.

Then, best of ``--repeat`` runs with ``time.perf_counter``, every reader starting from the file:

- segcompact: ``decode_segment`` to Arrow record batches with the compiled builder;
- segcompact pure: the same with ``pure=True``, on a prefix of ``--pure-mib`` MiB, one run;
- kafka-python: ``MemoryRecords`` over the file's bytes; each batch's CRC is validated (as
  segcompact's reader does) and each record's offset, timestamp, key, value and headers read;
- floor: the batches found by their length prefixes, CRC-32C of each and its records section
  decompressed; no record parsing.

Results are records/s and MB/s of file bytes (MB = 10^6 bytes) from the best wall-clock run, and
the ratios of segcompact to kafka-python and to the floor; the same ratios from process CPU time
are printed beside them, as they hold up better on a machine shared with other work. Nothing
here asserts a time.
"""

from __future__ import annotations

import gc
import json
import os
import random
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import crc32c
import lz4.frame
from kafka.record.memory_records import MemoryRecords

from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import BatchAttr, Compression
from segcompact.format.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LOG_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    V2_HEADER_SIZE,
    build_batch,
)
from segcompact.format.codecs import codec_for
from segcompact.format.columns import column_builder
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile
from tests.benchmarks import options

MiB = 1 << 20
BATCH_BYTES = 16 << 10  # records section of a batch before compression
TEMPLATES = 384  # distinct batches, repeated to fill the segment
FORMAT_VERSION = 1  # bump when generation changes, to invalidate cached segments
SEGMENT = "00000000000000000000.log"

_EVENTS = ("page_view", "add_to_cart", "checkout", "login", "logout", "search", "refund")
_REGIONS = ("eu-west-1", "us-east-1", "ap-south-1", "sa-east-1")
_CURRENCIES = ("EUR", "USD", "GBP", "JPY")


# --- Generation ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    path: Path
    codec: Compression
    file_bytes: int
    batches: int
    records: int
    records_bytes: int  # records sections before compression


def _record(rng: random.Random, offset: int, timestamp: int) -> Record:
    user = rng.randrange(200_000)
    key = b"customer/%08d/%s" % (user, rng.choice(_REGIONS).encode())
    items = ",".join(f'"sku-{rng.randrange(10_000):05d}"' for _ in range(rng.randrange(0, 4)))
    value = (
        f'{{"user":"user-{user:06d}","event":"{rng.choice(_EVENTS)}",'
        f'"amount":{rng.randrange(100_000) / 100:.2f},"currency":"{rng.choice(_CURRENCIES)}",'
        f'"items":[{items}],"session":"{rng.getrandbits(64):016x}"}}'
    ).encode()
    roll = rng.random()
    headers: tuple[tuple[str, bytes | None], ...] = ()
    if roll < 0.2:
        headers = (("trace-id", b"%032x" % rng.getrandbits(128)),)
    if roll < 0.05:
        headers += (("content-type", b"application/json"),)
    return Record(offset, timestamp, key, value, headers)


def _template(rng: random.Random, codec: Compression, timestamp: int) -> tuple[bytes, int, int]:
    """One batch at base offset 0: its bytes, record count and uncompressed records bytes."""
    records: list[Record] = []
    size = 0
    while size < BATCH_BYTES:
        timestamp += rng.randrange(0, 5)
        r = _record(rng, len(records), timestamp)
        records.append(r)
        size += (
            len(r.key or b"")
            + len(r.value or b"")
            + 12
            + sum(len(k) + len(v or b"") + 2 for k, v in r.headers)
        )
    data = build_batch(records, compression=codec)
    plain = build_batch(records) if codec is not Compression.NONE else data
    return data, len(records), len(plain) - V2_HEADER_SIZE


def generate(directory: Path, codec: Compression, size_mib: float, seed: int = 42) -> Segment:
    """The cached segment of ``size_mib`` MiB for ``codec``, generated if missing."""
    where = directory / f"{codec.label}-{size_mib:g}MiB-v{FORMAT_VERSION}"
    path, meta = where / SEGMENT, where / "meta.json"
    if meta.exists() and path.exists():
        info = json.loads(meta.read_text())
        return Segment(path, codec, **info)
    where.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    templates = [_template(rng, codec, 1_700_000_000_000 + i * 1000) for i in range(TEMPLATES)]
    target = int(size_mib * MiB)
    written = batches = records = records_bytes = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        while written < target:
            data, n, plain = templates[batches % TEMPLATES]
            entry = bytearray(data)
            struct.pack_into(">q", entry, 0, records)  # base offset: not covered by the CRC
            f.write(entry)
            written += len(entry)
            batches += 1
            records += n
            records_bytes += plain
    os.replace(tmp, path)
    info = {
        "file_bytes": written,
        "batches": batches,
        "records": records,
        "records_bytes": records_bytes,
    }
    meta.write_text(json.dumps(info))
    return Segment(path, codec, **info)


def prefix(segment: Segment, size_mib: float) -> Segment:
    """A segment of the whole batches in the first ``size_mib`` MiB of ``segment``."""
    limit = int(size_mib * MiB)
    if segment.file_bytes <= limit:
        return segment
    path = segment.path.parent / f"prefix-{size_mib:g}MiB" / SEGMENT
    data = segment.path.read_bytes()
    pos = batches = records = 0
    while pos < len(data):
        _, length = LOG_OVERHEAD.unpack_from(data, pos)
        end = pos + LOG_OVERHEAD.size + length
        if end > limit:
            break
        (count,) = struct.unpack_from(">i", data, pos + RECORDS_COUNT_OFFSET)
        pos, batches, records = end, batches + 1, records + count
    if not path.exists() or path.stat().st_size != pos:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data[:pos])
    ratio = segment.records_bytes / segment.file_bytes
    return Segment(path, segment.codec, pos, batches, records, int(pos * ratio))


# --- Readers ---------------------------------------------------------------------------------
# Each reads the whole file and returns (records, batches) it saw.


def read_segcompact(path: Path, pure: bool = False) -> tuple[int, int]:
    rows = 0
    for chunk in decode_segment(SegmentReader(LocalInputFile(path)), "bench", 0, pure=pure):
        rows += chunk.num_rows
    return rows, -1  # decode_segment does not count batches


def read_kafka_python(path: Path) -> tuple[int, int]:
    records = batches = 0
    memory = MemoryRecords(path.read_bytes())
    while (batch := memory.next_batch()) is not None:
        if not batch.validate_crc():
            raise ValueError(f"kafka-python: CRC mismatch in batch {batch.base_offset}")
        batches += 1
        for r in batch:
            _ = (r.offset, r.timestamp, r.key, r.value, r.headers)
            records += 1
    return records, batches


def read_floor(path: Path) -> tuple[int, int]:
    """Length prefixes, CRC-32C and decompression only: what any decoder must at least do."""
    data = memoryview(path.read_bytes())
    pos = records = batches = 0
    end_all = len(data)
    unpack_header = LOG_OVERHEAD.unpack_from
    crc_at, count_at = CRC_OFFSET, RECORDS_COUNT_OFFSET
    while pos < end_all:
        _, length = unpack_header(data, pos)
        end = pos + LOG_OVERHEAD.size + length
        (stored,) = struct.unpack_from(">I", data, pos + crc_at)
        if crc32c.crc32c(data[pos + ATTRIBUTES_OFFSET : end]) != stored:
            raise ValueError(f"floor: CRC mismatch at byte {pos}")
        attributes = data[pos + ATTRIBUTES_OFFSET + 1] & BatchAttr.COMPRESSION
        body = data[pos + V2_HEADER_SIZE : end]
        if attributes == Compression.LZ4:
            lz4.frame.decompress(body)
        elif attributes != Compression.NONE:
            codec_for(attributes).decompress(body, 1 << 30)
        (count,) = struct.unpack_from(">i", data, pos + count_at)
        records += count
        batches += 1
        pos = end
    return records, batches


# --- Measuring -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    seconds: float  # best run, wall clock (time.perf_counter)
    cpu_seconds: float  # best run, this process's CPU time: steadier on a shared machine
    records: int
    file_bytes: int
    runs: int

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.file_bytes / self.seconds / 1e6


def measure(
    name: str, read: Callable[[Path], tuple[int, int]], segment: Segment, repeat: int
) -> Result:
    best = best_cpu = float("inf")
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        records, _ = read(segment.path)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
        if records != segment.records:
            raise AssertionError(f"{name} read {records} records; {segment.records} written")
    return Result(name, best, best_cpu, segment.records, segment.file_bytes, repeat)


def run_codec(
    directory: Path, codec: Compression, size_mib: float, repeat: int, pure_mib: float
) -> dict[str, object]:
    segment = generate(directory, codec, size_mib)
    read_file = segment.path.read_bytes  # warm the page cache: every reader starts from it
    read_file()
    results = [measure("segcompact", read_segcompact, segment, repeat)]
    if pure_mib > 0:
        small = prefix(segment, pure_mib)
        results.append(
            measure(
                f"segcompact pure ({small.file_bytes / MiB:.1f} MiB prefix)",
                lambda p: read_segcompact(p, pure=True),
                small,
                1,
            )
        )
    results.append(measure("kafka-python", read_kafka_python, segment, repeat))
    results.append(measure("floor (CRC + decompress)", read_floor, segment, repeat))
    ours, kafka, floor = results[0], results[-2], results[-1]
    return {
        "segment": {**asdict(segment), "path": str(segment.path), "codec": codec.label},
        "results": {
            r.name: {**asdict(r), "records_per_s": r.records_per_s, "mb_per_s": r.mb_per_s}
            for r in results
        },
        "segcompact_vs_kafka_python": kafka.seconds / ours.seconds,
        "segcompact_vs_floor": floor.seconds / ours.seconds,
        "cpu_segcompact_vs_kafka_python": kafka.cpu_seconds / ours.cpu_seconds,
        "cpu_segcompact_vs_floor": floor.cpu_seconds / ours.cpu_seconds,
    }


def report(codec: str, out: dict[str, object]) -> None:
    seg = out["segment"]
    assert isinstance(seg, dict)
    results = out["results"]
    assert isinstance(results, dict)
    print(
        f"\n{codec}: {seg['file_bytes'] / MiB:.1f} MiB, {seg['records']:,} records in "
        f"{seg['batches']:,} batches; records sections {seg['records_bytes'] / MiB:.1f} MiB "
        f"({seg['records_bytes'] / seg['file_bytes']:.2f}x the file)"
    )
    print(f"  {'reader':<38} {'records/s':>12} {'MB/s':>9} {'best s':>8} {'cpu s':>8} {'runs':>5}")
    for name, r in results.items():
        print(
            f"  {name:<38} {r['records_per_s'] / 1e6:>10.3f} M {r['mb_per_s']:>9.1f} "
            f"{r['seconds']:>8.3f} {r['cpu_seconds']:>8.3f} {r['runs']:>5}"
        )
    print(
        f"  segcompact / kafka-python: {out['segcompact_vs_kafka_python']:.1f}x "
        f"(CPU time {out['cpu_segcompact_vs_kafka_python']:.1f}x); "
        f"segcompact / floor: {out['segcompact_vs_floor']:.2f}x "
        f"(CPU time {out['cpu_segcompact_vs_floor']:.2f}x)"
    )


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, object]]:
    parser = options.parser("decode", __doc__)
    options.add_codec_segments(parser, "runs per reader")
    parser.add_argument(
        "--pure-mib",
        type=float,
        default=8,
        help="prefix decoded with pure=True (0 skips it; default 8)",
    )
    args = parser.parse_args(argv)
    builder = type(column_builder()).__name__
    print(f"decode benchmark: builder {builder}, best of {args.repeat}, segments in {args.dir}")
    out = {}
    for codec in options.codecs(args):
        out[codec.label] = run_codec(args.dir, codec, args.size_mib, args.repeat, args.pure_mib)
        report(codec.label, out[codec.label])
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
