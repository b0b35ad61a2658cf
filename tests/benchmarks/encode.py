"""Encode throughput: the materialiser's writer beside kafka-python's batch builder.

    python -m tests.benchmarks.encode --size-mib 256 [--codec lz4 --codec none]

The records of the decode benchmark's segment (``tests/benchmarks/decode.py``, cached under
``--dir``) are decoded once into the Arrow rows the materialiser hands its writer
(``compaction.output.ROWS``). Then, best of ``--repeat`` runs, each writing segments into a fresh
directory and timed by process CPU time (one core):

- segcompact: ``write_partition``, which encodes records from the columns' buffers in C and
  runs Python once per batch (grouping, the delete horizon, compression, CRC);
- segcompact pure: the same with ``pure=True`` (records through ``encode_records``), on the
  first ``--pure-records`` records, one run;
- kafka-python: ``DefaultRecordBatchBuilder`` batches of the same size, the records handed over
  as Python values (taken out of Arrow before the clock starts), written to one file;
- floor: compression and CRC-32C of the same batches' records sections, encoded beforehand.

Records/s are CPU-time rates; the ratios are segcompact's to kafka-python's and to the floor.
Nothing here asserts a time.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
from kafka.record.default_records import DefaultRecordBatchBuilder

from segcompact.compaction.output import DEFAULT_BATCH_BYTES, ROWS
from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import Compression
from segcompact.format.codecs import codec_for
from segcompact.format.columns import encode_columns
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile, LocalOutputDirectory
from tests.benchmarks import decode, options
from tests.support.output import write_partition

# kafka-python's compression type ids are Kafka's codec ids.
KAFKA_PYTHON_CODEC = {c: int(c) for c in Compression}


def rows_of(segment: decode.Segment) -> pa.Table:
    """The segment's records as the materialiser's writer takes them."""
    chunks = list(decode_segment(SegmentReader(LocalInputFile(segment.path)), "bench", 0))
    table = pa.Table.from_batches(chunks)
    millis = table.column("timestamp").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64())
    return pa.table(
        {
            "offset": table.column("offset"),
            "timestamp": millis,
            "key": table.column("key"),
            "value": table.column("value"),
            "headers": table.column("headers"),
            "attributes": table.column("attributes"),
            "tombstone": table.column("value").is_null(),
            "delete_horizon": pa.nulls(table.num_rows, pa.int64()),
        },
        schema=ROWS,
    ).combine_chunks()


def write_segcompact(rows: pa.Table, codec: Compression, pure: bool = False) -> int:
    with tempfile.TemporaryDirectory() as out:
        written = write_partition(
            LocalOutputDirectory(Path(out)),
            rows,
            log_end_offset=int(rows.column("offset")[-1].as_py()) + 1,
            compression=codec,
            pure=pure,
        )
        return sum(w.size for w in written)


def python_values(rows: pa.Table) -> list[tuple[Any, ...]]:
    return list(
        zip(
            rows.column("offset").to_pylist(),
            rows.column("timestamp").to_pylist(),
            rows.column("key").to_pylist(),
            rows.column("value").to_pylist(),
            [[(h["key"], h["value"]) for h in hs] for hs in rows.column("headers").to_pylist()],
            strict=True,
        )
    )


def write_kafka_python(values: list[tuple[Any, ...]], codec: Compression) -> int:
    size = 0
    with tempfile.TemporaryFile() as f:
        builder: DefaultRecordBatchBuilder | None = None
        base = 0
        for offset, timestamp, key, value, headers in values:
            if builder is not None and builder.append(
                offset - base, timestamp, key, value, headers
            ):
                continue
            if builder is not None:
                size += f.write(builder.build())
            builder = DefaultRecordBatchBuilder(
                2, KAFKA_PYTHON_CODEC[codec], False, -1, -1, -1, DEFAULT_BATCH_BYTES
            )
            base = offset
            builder.append(0, timestamp, key, value, headers)
        if builder is not None:
            size += f.write(builder.build())
    return size


def floor_bodies(rows: pa.Table) -> list[bytes]:
    """Records sections of about a batch each, encoded before the clock starts."""
    from segcompact.compaction.output import batch_bounds, record_sizes
    from segcompact.format.arrow import column_buffers

    columns = column_buffers(rows)
    offsets = rows.column("offset").to_numpy()
    timestamps = rows.column("timestamp").to_numpy()
    return [
        encode_columns(columns, a, b, int(offsets[a]), int(timestamps[a]))
        for a, b in batch_bounds(offsets, record_sizes(rows), DEFAULT_BATCH_BYTES)
    ]


def write_floor(bodies: list[bytes], codec: Compression) -> int:
    size = 0
    for body in bodies:
        if codec is not Compression.NONE:
            body = codec_for(codec).compress(body)
        crc32c.crc32c(body)
        size += len(body)
    return size


def measure(run: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Best CPU seconds of ``repeat`` runs, and the bytes the last wrote."""
    best, size = float("inf"), 0
    for _ in range(repeat):
        start = time.process_time()
        size = run()
        best = min(best, time.process_time() - start)
    return best, size


def run_codec(
    directory: Path, codec: Compression, size_mib: float, repeat: int, pure_records: int
) -> dict[str, Any]:
    segment = decode.generate(directory, codec, size_mib)
    rows = rows_of(segment)
    n = rows.num_rows
    values = python_values(rows)
    bodies = floor_bodies(rows)
    results: dict[str, dict[str, Any]] = {}

    def add(name: str, records: int, seconds: float, size: int) -> None:
        results[name] = {
            "records": records,
            "cpu_seconds": seconds,
            "bytes": size,
            "records_per_s": records / seconds if seconds else 0.0,
        }

    add("segcompact", n, *measure(lambda: write_segcompact(rows, codec), repeat))
    if pure_records:
        head = rows.slice(0, min(n, pure_records))
        add(
            "segcompact pure",
            head.num_rows,
            *measure(lambda: write_segcompact(head, codec, pure=True), 1),
        )
    add("kafka-python", n, *measure(lambda: write_kafka_python(values, codec), repeat))
    add("floor (compress + CRC)", n, *measure(lambda: write_floor(bodies, codec), repeat))
    ours = results["segcompact"]["records_per_s"]
    return {
        "records": n,
        "results": results,
        "segcompact_vs_kafka_python": ours / results["kafka-python"]["records_per_s"],
        "segcompact_vs_floor": ours / results["floor (compress + CRC)"]["records_per_s"],
    }


def report(codec: str, out: dict[str, Any]) -> None:
    print(f"\n{codec}: {out['records']:,} records")
    for name, r in out["results"].items():
        rate = r["records_per_s"] / 1e6
        print(f"  {name:26s} {rate:7.2f} M records/s ({r['cpu_seconds']:.2f} CPU s)")
    print(
        f"  segcompact is {out['segcompact_vs_kafka_python']:.1f}x kafka-python, "
        f"{out['segcompact_vs_floor']:.2f}x the floor"
    )


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = options.parser("encode", __doc__)
    options.add_codec_segments(parser, "runs per writer")
    parser.add_argument(
        "--pure-records", type=int, default=50_000, help="records encoded with pure=True"
    )
    args = parser.parse_args(argv)
    out = {}
    for codec in options.codecs(args):
        out[codec.label] = run_codec(args.dir, codec, args.size_mib, args.repeat, args.pure_records)
        report(codec.label, out[codec.label])
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
