"""Segment files and their indexes, and KIP-534's delete horizon in written batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from segcompact.format.attributes import BatchAttr, Compression
from segcompact.format.batch import build_batch
from segcompact.format.index import IndexBuilder, read_offset_index, read_time_index
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.format.writer import SegmentWriter, segment_name
from segcompact.storage import LocalInputFile, LocalOutputDirectory


def _batch(first: int, n: int, ts: int, size: int = 100) -> bytes:
    return build_batch([Record(first + i, ts + i, b"k%d" % i, b"v" * size) for i in range(n)])


def test_indexes_follow_kafkas_interval_rule(tmp_path: Path) -> None:
    batches = [_batch(100 + 10 * i, 10, 5_000 - 100 * (i % 2) + 50 * i) for i in range(8)]
    with SegmentWriter(LocalOutputDirectory(tmp_path), 100, index_interval_bytes=2000) as writer:
        for b in batches:
            writer.append(b)
    sizes = [len(b) for b in batches]
    # Reference: Kafka's LogSegment.recover over the same batches.
    expected_offsets, expected_times, position, last_entry, max_ts = [], [], 0, 0, -1
    for i in range(len(batches)):
        last_offset, batch_max = 100 + 10 * i + 9, 5_000 - 100 * (i % 2) + 50 * i + 9
        if batch_max > max_ts:
            max_ts, max_off = batch_max, last_offset
        if position - last_entry > 2000:
            expected_offsets.append((last_offset, position))
            if not expected_times or max_ts > expected_times[-1][0]:
                expected_times.append((max_ts, max_off))
            last_entry = position
        position += sizes[i]
    if max_ts > expected_times[-1][0]:
        expected_times.append((max_ts, max_off))
    assert len(expected_offsets) >= 2
    index = (tmp_path / segment_name(100, ".index")).read_bytes()
    times = (tmp_path / segment_name(100, ".timeindex")).read_bytes()
    assert read_offset_index(index, 100) == expected_offsets
    assert read_time_index(times, 100) == expected_times
    assert len(index) == 8 * len(expected_offsets) and len(times) == 12 * len(expected_times)
    assert (tmp_path / segment_name(100)).stat().st_size == sum(sizes)


def test_writer_rejects_out_of_order_batches(tmp_path: Path) -> None:
    with SegmentWriter(LocalOutputDirectory(tmp_path), 0) as writer:
        writer.append(_batch(10, 5, 0))
        with pytest.raises(ValueError, match="out of order"):
            writer.append(_batch(12, 5, 0))


def test_index_builder_rejects_offsets_outside_the_segment() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        IndexBuilder(100).add(99, 0, 10)


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.label)
def test_delete_horizon_sets_bit_6_and_base_timestamp(tmp_path: Path, codec: Compression) -> None:
    records = [Record(7, 1_000, b"gone", None), Record(9, 3_000, b"kept", b"v")]
    data = build_batch(records, compression=codec, delete_horizon_ms=90_000)
    path = tmp_path / segment_name(7)
    path.write_bytes(data)
    (batch,) = SegmentReader(LocalInputFile(path))
    assert batch.attributes & BatchAttr.DELETE_HORIZON
    assert batch.delete_horizon_ms == batch.base_timestamp == 90_000
    assert batch.max_timestamp == 3_000
    assert batch.records() == records  # record timestamps unchanged


def test_empty_batch_keeps_the_offset_range(tmp_path: Path) -> None:
    path = tmp_path / segment_name(0)
    path.write_bytes(build_batch([], base_offset=40, last_offset=49, compression=Compression.LZ4))
    (batch,) = SegmentReader(LocalInputFile(path))
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (40, 49, 0)
    assert batch.records() == []
