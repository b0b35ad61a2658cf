"""Reducing a compacted log in its decoding task: in one pass, beside keys first.

    python -m tests.benchmarks.reduce [--size-mib 128] [--keys 200000] [--repeat 3] [--workdir D]

One partition's lz4 log of about ``--size-mib`` MiB is generated once and cached under
``--workdir``: 16 KiB batches (before compression) of records whose keys are drawn at random
among ``--keys`` for each record, as a producer writes them (no batch repeated:
``tests/support/keyed_log.py`` repeats batches, which leaves whole batches without a winner),
``keyed_log``'s JSON-like values of 100-200 bytes, 5 % tombstones, a trace header on a fifth.

Then ``--repeat`` rounds, the modes interleaved within each, of the log decoded and reduced as
the source's task does it (``decode_segment`` and ``SegmentReducer``, the offset strategy, the
source's budgets), each mode counting process CPU seconds, median per mode:

- one pass: every column built, the rows on the fronts held (filtered again as they lose);
- keys first: the first pass builds no value (nor header), the second builds the records that
  leave only, skipping the batches that hold none.

Both must leave the same records (checked). Nothing here asserts a time.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa

from segcompact.compaction.reduce import SegmentReducer
from segcompact.compaction.rules import Ranking
from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.format.writer import SegmentWriter
from segcompact.storage import LocalInputFile, LocalOutputDirectory
from tests.benchmarks import options
from tests.support.keyed_log import BASE_TIMESTAMP, MiB, key_bytes, value_bytes

BATCH_BYTES = 16 << 10
CHUNK_RECORDS, CHUNK_BYTES = 1 << 15, 64 << 20  # the source's defaults
MODES = ("one pass", "keys first")


def generate(directory: Path, size_mib: float, keys: int, seed: int = 7) -> Path:
    """The cached log's segment, generated if missing."""
    where = directory / f"random-{size_mib:g}MiB-{keys}k-s{seed}"
    path = where / "00000000000000000000.log"
    if path.exists():
        return path
    staging = where.with_suffix(".tmp")
    staging.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    offset = 0
    with SegmentWriter(LocalOutputDirectory(staging), 0) as writer:
        while writer.size < size_mib * MiB:
            records: list[Record] = []
            size = 0
            while size < BATCH_BYTES:
                k = rng.randrange(keys)
                value = None if rng.random() < 0.05 else value_bytes(rng, k)
                trace = rng.random() < 0.2
                headers = (("trace-id", b"%032x" % rng.getrandbits(128)),) if trace else ()
                at = offset + len(records)
                records.append(Record(at, BASE_TIMESTAMP + at, key_bytes(k), value, headers))
                size += 27 + len(value or b"") + 42 * len(headers)
            writer.append(build_batch(records, compression=Compression.LZ4))
            offset += len(records)
    staging.rename(where)
    return path


def _decode(path: Path, **kw: object) -> list[pa.RecordBatch]:
    reader = SegmentReader(LocalInputFile(path))
    chunks = decode_segment(
        reader, "bench", 0, chunk_records=CHUNK_RECORDS, chunk_bytes=CHUNK_BYTES, **kw
    )
    return list(chunks)


def reduce(path: Path, keys_first: bool) -> tuple[int, int]:
    """The log reduced as the source's task does; the records and the sum of offsets that
    leave."""
    reducer = SegmentReducer(
        Ranking(),
        budget_bytes=8 * CHUNK_BYTES,
        budget_records=256 * CHUNK_RECORDS,
        keys_first=keys_first,
    )
    out: list[pa.RecordBatch] = []
    read = 0
    for chunk in decode_segment(
        SegmentReader(LocalInputFile(path)),
        "bench",
        0,
        chunk_records=CHUNK_RECORDS,
        chunk_bytes=CHUNK_BYTES,
        values=not keys_first,
        headers=not keys_first,
    ):
        read += chunk.num_rows
        out += reducer.add(chunk)
    out += reducer.finish()
    if reducer.rescan:
        select = reducer.select(0, read)
        out += [reducer.leave(c) for c in _decode(path, select=select)]
        reducer.done(select)
    offsets = [o for b in out for o in b.column("offset").to_pylist()]
    return len(offsets), sum(offsets)


def main(argv: Sequence[str] | None = None) -> dict[str, object]:
    parser = options.parser("reduce", __doc__)
    parser.add_argument("--size-mib", type=float, default=128, help="log size (default 128)")
    parser.add_argument("--keys", type=int, default=200_000, help="distinct keys (200000)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the median counts")
    options.add_workdir(parser, "bench", "where the generated log is cached")
    args = parser.parse_args(argv)
    path = generate(args.workdir, args.size_mib, args.keys)
    path.read_bytes()  # the page cache: both modes read from it
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    left: dict[str, tuple[int, int]] = {}
    for _ in range(args.repeat):
        for mode in MODES:
            gc.collect()
            start = time.process_time()
            left[mode] = reduce(path, keys_first=mode == "keys first")
            cpu[mode].append(time.process_time() - start)
    if left["one pass"] != left["keys first"]:
        raise AssertionError(f"the modes left different records: {left}")
    size = path.stat().st_size
    print(
        f"reduce benchmark: {size / MiB:.1f} MiB, {args.keys:,} keys, {left['one pass'][0]:,} "
        f"records leave; CPU seconds, median of {args.repeat}"
    )
    out: dict[str, object] = {"file_bytes": size, "records_left": left["one pass"][0]}
    for mode, runs in cpu.items():
        median = statistics.median(runs)
        print(
            f"  {mode:<10} {median:7.3f} s ({' '.join(f'{r:.3f}' for r in runs)}), "
            f"{size / 1e6 / median:6.1f} MB per CPU second"
        )
        out[mode] = {"cpu_seconds": runs, "median": median}
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
