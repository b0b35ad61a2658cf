"""Bad input: each case is a CorruptBatchError naming file, position, base offset and reason."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from segcompact.errors import CorruptBatchError
from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import Compression, TimestampType
from segcompact.format.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORDS_COUNT_OFFSET,
    V2_HEADER_SIZE,
    build_batch,
)
from segcompact.format.codecs import codec_for
from segcompact.format.crc import crc32c
from segcompact.format.record import Record
from segcompact.format.segment import ReadLimits, SegmentReader
from segcompact.storage import LocalInputFile

GOOD = build_batch([Record(i, 1000 + i, b"k%d" % i, b"v" * 10) for i in range(5)])
SECOND_OFFSET = 5


def _second(**kwargs: object) -> bytes:
    return build_batch(
        [Record(SECOND_OFFSET + i, 2000, b"key", b"value") for i in range(3)], **kwargs
    )


def _fix_crc(entry: bytearray) -> bytes:
    struct.pack_into(">I", entry, CRC_OFFSET, crc32c(bytes(entry[ATTRIBUTES_OFFSET:])))
    return bytes(entry)


def _patch(entry: bytes, fmt: str, offset: int, value: int, fix_crc: bool = True) -> bytes:
    out = bytearray(entry)
    struct.pack_into(fmt, out, offset, value)
    return _fix_crc(out) if fix_crc else bytes(out)


def _with_payload(payload: bytes, count: int, codec: Compression = Compression.NONE) -> bytes:
    """A v2 batch at offset 5 whose records section is ``payload`` (valid CRC)."""
    body = payload if codec is Compression.NONE else codec_for(codec).compress(payload)
    return _with_body(body, count, codec)


def _with_body(body: bytes, count: int, codec: Compression) -> bytes:
    """A v2 batch at offset 5 flagged with ``codec`` and holding ``body`` as stored."""
    header = bytearray(_second()[:V2_HEADER_SIZE])
    struct.pack_into(">i", header, LENGTH_OFFSET, V2_HEADER_SIZE - LOG_OVERHEAD.size + len(body))
    struct.pack_into(">h", header, ATTRIBUTES_OFFSET, int(codec))
    struct.pack_into(">i", header, RECORDS_COUNT_OFFSET, count)
    return _fix_crc(header + body)


CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "truncated batch": (lambda: _second()[:-4], "runs past the end of the file"),
    "truncated header": (lambda: _second()[:10], "too few for a batch header"),
    "bad crc": (lambda: _patch(_second(), ">I", CRC_OFFSET, 12345, fix_crc=False), "CRC mismatch"),
    "length past end of file": (
        lambda: _patch(_second(), ">i", LENGTH_OFFSET, 1 << 20),
        "runs past the end",
    ),
    "length below header": (
        lambda: _patch(_second(), ">i", LENGTH_OFFSET, 20),
        "less than the 49 bytes",
    ),
    "unknown magic": (
        lambda: _patch(_second(), ">b", MAGIC_OFFSET, 7, fix_crc=False),
        "unknown magic 7",
    ),
    "unknown codec": (lambda: _patch(_second(), ">h", ATTRIBUTES_OFFSET, 6), "codec id 6"),
    "count larger than data": (
        lambda: _patch(_second(), ">i", RECORDS_COUNT_OFFSET, 1000),
        "records count 1000",
    ),
    "negative last offset delta": (
        lambda: _patch(_second(), ">i", LAST_OFFSET_DELTA_OFFSET, -1),
        "last offset delta -1",
    ),
    "trailing bytes": (lambda: _with_payload(_second()[V2_HEADER_SIZE:] + b"\x00", 3), "remain"),
    "bad varint": (lambda: _with_payload(b"\xff" * 12, 1), "longer than 5 bytes"),
    **{
        f"corrupt {codec.label}": (
            lambda codec=codec, prefix=prefix: _with_body(prefix + b"garbage" * 4, 1, codec),
            f"{codec.label} data is corrupt",
        )
        for codec, prefix in (
            (Compression.GZIP, b"\x1f\x8b\x08\x00"),
            (Compression.SNAPPY, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x10"),
            (Compression.LZ4, b"\x04\x22\x4d\x18"),
            (Compression.ZSTD, b"\x28\xb5\x2f\xfd"),
        )
    },
    "decompression bomb": (
        lambda: _with_payload(b"\x00" * (4 << 20), 1, Compression.LZ4),
        "more than 1048576 bytes",
    ),
    # Found by fuzzing the segment reader (tests/fuzz/crashers): each crashed the decoding task.
    "last offset past 64 bits": (
        lambda: _patch(_second(), ">q", 0, 2**63 - 2),
        "base offset 9223372036854775806 + last offset delta 2 overflows 64 bits",
    ),
    "delete horizon past microseconds": (
        lambda: _second(delete_horizon_ms=2**62),
        "delete horizon 4611686018427387904 ms is out of range",
    ),
    "log append time past microseconds": (
        lambda: _second(timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=-(2**62)),
        "log append time -4611686018427387904 ms is out of range",
    ),
    "negative key length": (
        lambda: _with_payload(bytes([12, 0, 0, 0, 5]) + b"\x00" * 7, 1),
        "key length -3 is negative",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("pure", [True, False], ids=["pure", "compiled"])
def test_corrupt_batch_is_named_and_earlier_batches_survive(
    tmp_path: Path, case: str, pure: bool
) -> None:
    make, reason = CASES[case]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(GOOD + make())
    limits = ReadLimits(max_uncompressed_bytes=1 << 20)
    decoded = []
    with pytest.raises(CorruptBatchError) as info:
        reader = SegmentReader(LocalInputFile(path), limits=limits)
        for rb in decode_segment(reader, "t", 0, pure=pure):
            decoded.append(rb)
    error = info.value
    assert error.file == str(path)
    assert error.position == len(GOOD)
    assert reason in error.reason
    odd = ("truncated header", "unknown magic", "last offset past 64 bits")  # base offset as read
    if case not in odd and "past the end" not in reason:
        assert error.base_offset == SECOND_OFFSET
    assert str(path) in str(error) and f"position {len(GOOD)}" in str(error)
    # The good batch before it came out whole.
    assert sum(rb.num_rows for rb in decoded) == 5


def test_reader_reports_last_valid_position(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(GOOD + _second()[:-1])
    reader = SegmentReader(LocalInputFile(path))
    with pytest.raises(CorruptBatchError):
        list(reader)
    assert reader.valid_bytes == len(GOOD)


def test_claimed_size_over_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(GOOD)
    with pytest.raises(CorruptBatchError, match="exceeds the 64-byte limit"):
        list(SegmentReader(LocalInputFile(path), limits=ReadLimits(max_batch_bytes=64)))


def test_crc_not_verified_on_request(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_patch(GOOD, ">I", CRC_OFFSET, 1, fix_crc=False))
    (batch,) = SegmentReader(LocalInputFile(path), verify_crc=False)
    assert not batch.crc_valid
    assert len(batch.records()) == 5
