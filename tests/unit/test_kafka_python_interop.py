"""Both directions against kafka-python's record module, an independent codec."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from segcompact.format import control
from segcompact.format.attributes import Compression, TimestampType
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile
from tests.unit.strategies import record_lists

V2_CODECS = list(Compression)
LEGACY_CODECS = [c for c in Compression if c is not Compression.ZSTD]  # zstd needs v2


def _write(tmp_path: Path, *entries: bytes) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(entries))
    return path


def _kafka_python_v2(
    records: list[Record], codec: Compression, *, transactional: bool = False
) -> bytes:
    producer = (4242, 7, 100) if transactional else (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=transactional,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=1 << 30,
    )
    base = records[0].offset
    for r in records:
        builder.append(r.offset - base, r.timestamp, r.key, r.value, list(r.headers))
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base)  # the broker assigns the base offset; not in the CRC
    return bytes(data)


def _kafka_python_records(data: bytes) -> list[tuple[list[Record], DefaultRecordBatch]]:
    """Each batch kafka-python finds, with its records; its CRC is checked first."""
    out = []
    memory = MemoryRecords(data)
    while (batch := memory.next_batch()) is not None:
        assert batch.validate_crc()
        records = [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
        out.append((records, batch))
    return out


def _strip_attributes(records: list[Record]) -> list[Record]:
    return [Record(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: c.label)
@pytest.mark.parametrize("transactional", [False, True])
def test_we_read_what_kafka_python_writes(
    tmp_path: Path, codec: Compression, transactional: bool
) -> None:
    records = [
        Record(
            1000 + i,
            1_600_000_000_000 + i * 7,
            None if i == 3 else b"k%d" % (i % 4),
            None if i % 5 == 4 else b"value-%d" % i * (i % 3),
            (("h1", b"a"), ("h1", b"b"), ("empty", b""), ("null", None)) if i % 2 else (),
        )
        for i in range(50)
    ]
    path = _write(
        tmp_path,
        _kafka_python_v2(records[:20], codec, transactional=transactional),
        _kafka_python_v2(records[20:], codec, transactional=transactional),
    )
    batches = list(SegmentReader(LocalInputFile(path)))
    assert [b.compression for b in batches] == [codec, codec]
    assert all(b.crc_valid and b.magic == 2 for b in batches)
    assert [b.is_transactional for b in batches] == [transactional] * 2
    assert batches[0].producer_id == (4242 if transactional else -1)
    assert [b.last_offset for b in batches] == [1019, 1049]
    assert [r for b in batches for r in _strip_attributes(b.records())] == records


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=record_lists())
def test_round_trip_against_kafka_python_property(tmp_path: Path, records: list[Record]) -> None:
    for codec in (Compression.NONE, Compression.LZ4):
        ours = build_batch(records, compression=codec)
        ((theirs, batch),) = _kafka_python_records(ours)
        assert theirs == _strip_attributes(records)
        assert len(ours) == batch.size_in_bytes
        path = _write(tmp_path, _kafka_python_v2(records, codec))
        (read,) = SegmentReader(LocalInputFile(path))
        assert _strip_attributes(read.records()) == _strip_attributes(records)


@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: c.label)
def test_kafka_python_reads_what_we_write(codec: Compression) -> None:
    records = [
        Record(
            10 + 2 * i,
            5_000 + i,
            b"key-%d" % i,
            None if i == 2 else b"v" * (i * 50),
            (("trace", b"\x00\x01"),) if i % 2 else (),
        )
        for i in range(30)
    ]
    data = build_batch(
        records,
        compression=codec,
        producer_id=99,
        producer_epoch=3,
        base_sequence=17,
        is_transactional=True,
        partition_leader_epoch=5,
    )
    ((theirs, batch),) = _kafka_python_records(data)
    assert batch.compression_type == int(codec)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (99, 3, 17)
    assert batch.is_transactional and not batch.is_control_batch
    assert batch.leader_epoch == 5
    assert batch.last_offset == records[-1].offset
    assert theirs == records


def test_log_append_time_batches_report_the_batch_max_timestamp(tmp_path: Path) -> None:
    records = [Record(i, 100 + i, b"k", b"v") for i in range(3)]
    data = build_batch(records, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=999)
    ((theirs, batch),) = _kafka_python_records(data)
    assert batch.timestamp_type == 1
    assert [r.timestamp for r in theirs] == [999, 999, 999]
    (ours,) = SegmentReader(LocalInputFile(_write(tmp_path, data)))
    assert [r.timestamp for r in ours.records()] == [999, 999, 999]


def test_control_batches_kafka_python_recognises() -> None:
    # A COMMIT marker: key = version 0, type 1; value = version 0, coordinator epoch 0.
    marker = control.marker(77, commit=True, timestamp=1_000)
    data = build_batch(
        [marker], is_control=True, is_transactional=True, producer_id=5, producer_epoch=0
    )
    batch = MemoryRecords(data).next_batch()
    assert batch.is_control_batch
    (record,) = list(batch)
    assert record.commit and not record.abort


def _legacy(magic: int, codec: Compression, records: list[Record]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 30)
    last = records[-1].offset
    for i, r in enumerate(records):
        # Inner offsets of a v1 compressed set are relative; v0's are absolute.
        offset = i if (magic == 1 and codec is not Compression.NONE) else r.offset
        builder.append(offset, r.timestamp if magic else None, r.key, r.value)
    data = bytearray(builder.build())
    if codec is not Compression.NONE:
        struct.pack_into(">q", data, 0, last)  # wrapper offset = last inner offset
    return bytes(data)


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.label)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets(tmp_path: Path, magic: int, codec: Compression) -> None:
    first = [
        Record(100 + i, 9_000 + i if magic else -1, b"k%d" % i, None if i == 1 else b"x" * i)
        for i in range(5)
    ]
    second = [Record(105 + i, 9_100 + i if magic else -1, b"j%d" % i, b"y") for i in range(3)]
    path = _write(tmp_path, _legacy(magic, codec, first), _legacy(magic, codec, second))
    batches = list(SegmentReader(LocalInputFile(path)))
    assert all(b.magic == magic and b.crc_valid for b in batches)
    assert {b.compression for b in batches} == {codec}
    expected_type = TimestampType.CREATE_TIME if magic else TimestampType.NO_TIMESTAMP
    assert {b.timestamp_type for b in batches} == {expected_type}
    assert [r for b in batches for r in b.records()] == first + second
    if codec is not Compression.NONE:
        assert [(b.base_offset, b.last_offset) for b in batches] == [(100, 104), (105, 107)]
