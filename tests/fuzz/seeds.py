"""Seed inputs for the fuzzers.

    python -m tests.fuzz.seeds records DIR    # decode_fuzzer.c: records sections
    python -m tests.fuzz.seeds segments DIR   # segment_fuzzer.py: whole segment files

Records sections are those of batches our encoder writes, behind the C harness's 18-byte prefix
(count, base offset, base timestamp); segments hold a batch of each codec, a transaction with
its marker, and kafka-python's v0 and v1 message sets.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from kafka.record.legacy_records import LegacyRecordBatchBuilder

from segcompact.format import control
from segcompact.format.attributes import Compression
from segcompact.format.batch import V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record

_PREFIX = struct.Struct("<Hqq")

_SHAPES = {
    "plain": [Record(i, 1_000 + i, b"k%d" % i, b"v" * i) for i in range(5)],
    "nulls": [Record(0, 5, None, b"x"), Record(1, 6, b"k", None)],
    "headers": [
        Record(0, 7, b"k", b"v", (("h", b"1"), ("h\u00e9", None))),
        Record(1, 8, b"k2", b"", (("version", b"\x00\x00\x00\x02"),)),
    ],
    "deltas": [Record(0, -1, b"a", b"b"), Record(2**31 - 1, 2**40, b"c", b"d")],
    "empty": [],
}


def _batch(records: list[Record], **kwargs: object) -> bytes:
    last = max((r.offset for r in records), default=0)
    return build_batch(records, base_offset=0, last_offset=last, **kwargs)  # type: ignore[arg-type]


def records() -> dict[str, bytes]:
    """Plain records, null keys and values, headers (a null value, a two-byte character), large
    deltas, and an empty batch."""
    out = {}
    for name, shape in _SHAPES.items():
        base_ts = shape[0].timestamp if shape else 0
        out[name] = _PREFIX.pack(len(shape), 0, base_ts) + _batch(shape)[V2_HEADER_SIZE:]
    return out


def _legacy(magic: int, codec: Compression) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 20)
    for i in range(3):
        builder.append(i, 5_000 + i if magic else None, b"k%d" % i, b"v")
    data = bytearray(builder.build())
    if codec is not Compression.NONE:
        struct.pack_into(">q", data, 0, 2)  # the wrapper carries the last inner offset
    return bytes(data)


def segments() -> dict[str, bytes]:
    plain = _SHAPES["plain"]
    out = {f"v2-{c.label}": _batch(plain, compression=c) for c in Compression}
    txn = dict(producer_id=9, producer_epoch=0, is_transactional=True)
    out["v2-transaction"] = _batch(plain, **txn) + build_batch(
        [control.marker(5, commit=True, timestamp=2_000)], is_control=True, **txn
    )
    for magic in (0, 1):
        for codec in (Compression.NONE, Compression.GZIP):
            out[f"v{magic}-{codec.label}"] = _legacy(magic, codec)
    return out


def main() -> None:
    kind, target = sys.argv[1], Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    for name, data in {"records": records, "segments": segments}[kind]().items():
        (target / name).write_bytes(data)


if __name__ == "__main__":
    main()
