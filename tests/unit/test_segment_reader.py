"""What the segment reader reports besides batches: where the valid part of a file ends and the
last offset it holds, found in the same pass as the batches (no second walk)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from segcompact.errors import CorruptBatchError
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile


def _records(first: int, count: int) -> list[Record]:
    return [Record(first + i, 1_000 + i, b"k", b"v") for i in range(count)]


def _read(tmp_path: Path, data: bytes, base: int = 0) -> tuple[SegmentReader, list[int]]:
    """The reader after reading the whole file, and the last offsets of the batches it gave."""
    path = tmp_path / f"{base:020d}.log"
    path.write_bytes(data)
    reader = SegmentReader(LocalInputFile(path))
    return reader, [b.last_offset for b in reader]


def test_trailing_empty_batches_count(tmp_path: Path) -> None:
    data = build_batch(_records(0, 3)) + build_batch([], base_offset=3, last_offset=9)
    reader, lasts = _read(tmp_path, data)
    assert lasts == [2, 9]
    assert (reader.last_offset, reader.valid_bytes) == (9, len(data))


def test_a_corrupt_tail_leaves_the_last_good_batch(tmp_path: Path) -> None:
    first = build_batch(_records(0, 3))
    good = first + build_batch(_records(3, 2))
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(good + b"\x00garbage")
    reader = SegmentReader(LocalInputFile(path))
    seen = []
    with pytest.raises(CorruptBatchError) as info:
        seen.extend(b.last_offset for b in reader)
    assert seen == [2, 4]
    assert (reader.last_offset, reader.valid_bytes) == (4, len(good))
    assert info.value.position == len(good)


def test_a_batch_the_consumer_stops_at_is_not_counted(tmp_path: Path) -> None:
    first = build_batch(_records(0, 3))
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(first + build_batch(_records(3, 2)))
    reader = SegmentReader(LocalInputFile(path))
    for batch in reader:
        if batch.base_offset == 3:
            break  # as the decoder does when a batch's records turn out corrupt
    assert (reader.last_offset, reader.valid_bytes) == (2, len(first))


def test_an_empty_file(tmp_path: Path) -> None:
    reader, lasts = _read(tmp_path, b"")
    assert lasts == [] and (reader.last_offset, reader.valid_bytes) == (-1, 0)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets(tmp_path: Path, magic: int) -> None:
    builder = LegacyRecordBatchBuilder(
        magic=magic, compression_type=int(Compression.GZIP), batch_size=1 << 30
    )
    for i in range(4):  # inner offsets: absolute in v0, relative in v1
        builder.append(10 + i if magic == 0 else i, 5_000 if magic else None, b"k", b"v")
    wrapper = bytearray(builder.build())
    struct.pack_into(">q", wrapper, 0, 13)  # a compressed set carries its last inner offset
    plain = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
    plain.append(14, 5_000 if magic else None, b"k", b"v")
    reader, lasts = _read(tmp_path, bytes(wrapper) + bytes(plain.build()), base=10)
    assert lasts == [13, 14] and reader.last_offset == 14


def _v1_wrapper(wrapper_offset: int, count: int, inner: list[int] | None = None) -> bytes:
    """A gzip v1 message set of ``count`` inner messages (relative offsets 0..count-1, or
    ``inner``)."""
    builder = LegacyRecordBatchBuilder(
        magic=1, compression_type=int(Compression.GZIP), batch_size=1 << 30
    )
    for i, offset in enumerate(inner or range(count)):
        builder.append(offset, 5_000 + i, b"k%d" % i, b"v")
    wrapper = bytearray(builder.build())
    struct.pack_into(">q", wrapper, 0, wrapper_offset)
    return bytes(wrapper)


def test_a_v1_wrapper_at_offset_0_keeps_its_inner_offsets_as_kafka_does(tmp_path: Path) -> None:
    # Some librdkafka producers left the wrapper offset 0; Kafka and kafka-python then read the
    # inner offsets as written (they were negative here: 0 - 3 + i).
    data = _v1_wrapper(0, 4)
    reader, lasts = _read(tmp_path, data)
    offsets = [r.offset for b in SegmentReader(reader.file) for r in b.records()]
    theirs = [r.offset for r in LegacyRecordBatch(data, 1)]
    assert offsets == theirs == [0, 1, 2, 3]
    assert lasts == [3] and reader.last_offset == 3


def test_a_v1_wrapper_below_its_last_inner_offset_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(_v1_wrapper(2, 4))
    with pytest.raises(CorruptBatchError, match="offset 2 is below its last inner offset 3"):
        list(SegmentReader(LocalInputFile(path)))


def test_a_v1_inner_offset_past_its_wrapper_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(_v1_wrapper(10, 3, inner=[0, 5, 1]))  # absolute: 9, 14, 10
    with pytest.raises(CorruptBatchError, match=r"inner offset 5 .* lies outside 0\.\.10"):
        list(SegmentReader(LocalInputFile(path)))


def test_a_batch_below_the_segments_base_offset_is_corrupt(tmp_path: Path) -> None:
    good = build_batch(_records(100, 2), base_offset=100)
    path = tmp_path / f"{100:020d}.log"
    path.write_bytes(good + build_batch(_records(40, 2), base_offset=40))
    reader = SegmentReader(LocalInputFile(path))
    with pytest.raises(CorruptBatchError) as info:
        list(reader)
    assert "offset 40 is below the segment's base offset 100" in str(info.value)
    assert (info.value.position, info.value.base_offset) == (len(good), 40)
    assert (reader.last_offset, reader.valid_bytes) == (101, len(good))


@pytest.mark.parametrize("again", [101, 103], ids=["overlapping", "repeated"])
def test_a_batch_not_past_the_previous_one_is_corrupt(tmp_path: Path, again: int) -> None:
    """Offsets only go forward in a log: Kafka refuses such an append ("Out of order offsets")."""
    good = build_batch(_records(100, 4), base_offset=100)
    path = tmp_path / f"{100:020d}.log"
    path.write_bytes(good + build_batch(_records(again, 3), base_offset=again))
    reader = SegmentReader(LocalInputFile(path))
    with pytest.raises(CorruptBatchError) as info:
        list(reader)
    assert f"offset {again} is not past the previous batch's last offset 103" in str(info.value)
    assert (info.value.position, info.value.base_offset) == (len(good), again)
    assert (reader.last_offset, reader.valid_bytes) == (103, len(good))


def test_a_file_that_shrinks_while_read_is_corrupt_not_a_crash(tmp_path: Path) -> None:
    data = build_batch(_records(0, 3)) + build_batch(_records(3, 2))
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(data)

    class Shrinking(LocalInputFile):
        __slots__ = ()

        def __len__(self) -> int:
            return len(data) + 100  # listed before a truncation

    with pytest.raises(CorruptBatchError, match="truncated"):
        list(SegmentReader(Shrinking(path)))
