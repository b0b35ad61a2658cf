"""Packing compacted records into segments (the materialiser's pure half)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from segcompact.compaction import output
from segcompact.compaction.output import PartitionWriter
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.columns import PyColumnBuilder, encode_columns
from segcompact.format.record import Record, encode_records
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile, LocalOutputDirectory
from tests.support.output import OutputRecord, output_rows, write_partition
from tests.unit.strategies import record_lists


def out(offset: int, *, tombstone: bool = False, horizon: int | None = None) -> OutputRecord:
    return OutputRecord(
        offset,
        1_000 + offset,
        b"k%d" % offset,
        None if tombstone else b"v" * 50,
        (),
        0,
        tombstone,
        horizon,
    )


def _write(directory: Path, records: list[OutputRecord], **settings: Any) -> list[Path]:
    """``write_partition`` into a local directory; the paths of the logs, whose sizes it
    reported."""
    written = write_partition(LocalOutputDirectory(directory), output_rows(records), **settings)
    paths = [directory / w.name for w in written]
    assert [w.size for w in written] == [p.stat().st_size for p in paths]
    return paths


def test_offsets_kept_batches_regrouped_segments_rolled(tmp_path: Path) -> None:
    records = [out(o) for o in range(0, 3000, 3)]
    paths = _write(
        tmp_path,
        records,
        log_end_offset=2998,
        compression=Compression.LZ4,
        segment_bytes=8_000,
        batch_bytes=2_000,
    )
    assert len(paths) >= 2
    batches = [b for p in paths for b in SegmentReader(LocalInputFile(p))]
    assert all(b.compression is Compression.LZ4 for b in batches)
    assert [r.offset for b in batches for r in b.records()] == [r.offset for r in records]
    for p in paths:
        assert Path(p).stat().st_size <= 8_000
        first = next(iter(SegmentReader(LocalInputFile(p))))
        assert Path(p).name == f"{first.base_offset:020d}.log"
        assert Path(p).with_suffix(".index").exists() and Path(p).with_suffix(".timeindex").exists()


def test_tombstone_batches_carry_the_latest_horizon(tmp_path: Path) -> None:
    records = [
        out(1),
        out(2, tombstone=True, horizon=50_000),
        out(3, tombstone=True, horizon=70_000),
    ]
    (path,) = _write(tmp_path, records, log_end_offset=4)
    (batch,) = SegmentReader(LocalInputFile(path))
    assert batch.delete_horizon_ms == 70_000
    assert [r.timestamp for r in batch.records()] == [1_001, 1_002, 1_003]
    assert batch.records()[1].value is None


def test_log_end_offset_kept_with_an_empty_batch(tmp_path: Path) -> None:
    (path,) = _write(tmp_path, [out(1), out(5)], log_end_offset=10)
    batches = list(SegmentReader(LocalInputFile(path)))
    assert (batches[-1].base_offset, batches[-1].last_offset, batches[-1].records_count) == (
        9,
        9,
        0,
    )
    # kafka-python, an independent reader, agrees on the layout.
    memory = MemoryRecords(Path(path).read_bytes())
    seen = []
    while (b := memory.next_batch()) is not None:
        seen.append((b.base_offset, b.last_offset, len(list(b))))
    assert seen == [(1, 5, 2), (9, 9, 0)]


def test_an_empty_partition_is_one_empty_batch(tmp_path: Path) -> None:
    (path,) = _write(tmp_path, [], log_end_offset=7)
    assert [(b.base_offset, b.last_offset) for b in SegmentReader(LocalInputFile(path))] == [(6, 6)]


def test_record_past_the_log_end_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="past the log end offset 3"):
        _write(tmp_path, [out(5)], log_end_offset=3)


def test_first_segment_starts_at_the_log_start_offset(tmp_path: Path) -> None:
    paths = _write(tmp_path, [out(50), out(51)], log_end_offset=60, log_start_offset=40)
    assert Path(paths[0]).name == f"{40:020d}.log"
    assert [b.base_offset for b in SegmentReader(LocalInputFile(paths[0]))] == [50, 59]


@settings(max_examples=150, deadline=None)
@given(
    record_lists(max_size=40, keyed=True),
    st.sampled_from(list(Compression)),
    st.integers(100, 3000),
    st.lists(st.one_of(st.none(), st.integers(0, 2**41)), min_size=40, max_size=40),
)
def test_batches_are_byte_for_byte_the_pure_batch_builders(
    tmp_path_factory: pytest.TempPathFactory,
    records: list[Record],
    compression: Compression,
    batch_bytes: int,
    horizons: list[int | None],
) -> None:
    rows = [
        OutputRecord(
            r.offset,
            r.timestamp,
            r.key or b"",
            r.value,
            r.headers,
            r.attributes,
            r.value is None,
            h,
        )
        for r, h in zip(records, horizons, strict=False)
    ]
    directory = tmp_path_factory.mktemp("out")
    paths = _write(
        directory,
        rows,
        log_end_offset=rows[-1].offset + 1,
        compression=compression,
        batch_bytes=batch_bytes,
    )
    ours = [(p, b) for p in paths for b in SegmentReader(LocalInputFile(p))]
    # Each batch as build_batch (encode_records, in Python) makes it from the same records.
    by_offset = {r.offset: r for r in rows}
    for path, batch in ours:
        group = [by_offset[rec.offset] for rec in batch.records()]
        kept = [g.delete_horizon for g in group if g.tombstone and g.delete_horizon is not None]
        expect = build_batch(
            [Record(g.offset, g.timestamp, g.key, g.value, g.headers, g.attributes) for g in group],
            compression=compression,
            delete_horizon_ms=max(kept) if kept else None,
        )
        assert path.read_bytes()[batch.position : batch.position + batch.size] == expect
    assert [rec.offset for _, b in ours for rec in b.records()] == [r.offset for r in rows]


@settings(max_examples=200, deadline=None)
@given(record_lists(max_size=30), st.integers(-(2**40), 2**40), st.integers(0, 2**40))
def test_c_encoder_is_byte_for_byte_the_pure_one(
    records: list[Record], base_timestamp: int, base_offset_back: int
) -> None:
    # At most 2**31 - 1 below the last record: a record's offset delta is a 32-bit varint.
    lowest = max(0, records[-1].offset - 0x7FFFFFFF)
    base_offset = max(lowest, records[0].offset - base_offset_back % (2**31))
    builder = PyColumnBuilder()
    payload = encode_records(records, base_offset, base_timestamp)
    last = records[-1].offset - base_offset
    builder.append(payload, len(records), base_offset, base_timestamp, 0, last)
    columns = builder.finish()
    for start in range(0, len(records), 7):
        stop = min(len(records), start + 11)
        pure = encode_columns(columns, start, stop, base_offset, base_timestamp, pure=True)
        assert encode_columns(columns, start, stop, base_offset, base_timestamp) == pure
    assert encode_columns(columns, 0, len(records), base_offset, base_timestamp) == payload


def test_c_encoder_refuses_what_does_not_fit() -> None:
    builder = PyColumnBuilder()
    records = [Record(5, 10, b"k", b"v")]
    builder.append(encode_records(records, 0, 0), 1, 0, 0, 0, 5)
    columns = builder.finish()
    with pytest.raises(ValueError, match="varint out of range: offset 5 from base -4294967296"):
        encode_columns(columns, 0, 1, -(2**32), 0)
    with pytest.raises(ValueError, match=r"records 0\.\.2 outside 0\.\.1"):
        encode_columns(columns, 0, 2, 0, 0)
    with pytest.raises(ValueError, match="column 5 holds"):
        encode_columns(columns._replace(key_offsets=b"\0" * 4), 0, 1, 0, 0)


def _with_headers(offset: int) -> OutputRecord:
    headers = (("h", b"x" * (offset % 40)), ("n", None))
    return OutputRecord(offset, 1_000 + offset, b"k%d" % offset, b"v" * 30, headers, 0, False, None)


def test_records_are_encoded_slice_by_slice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However large the partition, the encoder sees slices of bounded bytes (its buffers
    have 32-bit offsets); a batch never spans two, and each is still build_batch's."""
    records = [_with_headers(o) for o in range(0, 300, 3)]
    whole = _write(tmp_path / "whole", records, log_end_offset=298)
    monkeypatch.setattr(output, "SLICE_BYTES", 500)
    sliced = _write(tmp_path / "sliced", records, log_end_offset=298)
    batches = [b for p in sliced for b in SegmentReader(LocalInputFile(p))]
    assert len(batches) > len([b for p in whole for b in SegmentReader(LocalInputFile(p))])
    by_offset = {r.offset: r for r in records}
    for path, batch in ((p, b) for p in sliced for b in SegmentReader(LocalInputFile(p))):
        group = [by_offset[rec.offset] for rec in batch.records()]
        expect = build_batch(
            [Record(g.offset, g.timestamp, g.key, g.value, g.headers, 0) for g in group]
        )
        assert path.read_bytes()[batch.position : batch.position + batch.size] == expect
    assert [rec.offset for b in batches for rec in b.records()] == [r.offset for r in records]


@pytest.mark.parametrize("cuts", [[1], [40, 41], [7, 50, 51, 99]])
def test_a_partition_added_in_parts_is_written_as_a_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cuts: list[int]
) -> None:
    """The materialiser gets a partition's rows a batch at a time and holds about a slice of
    them: however they are cut, the bytes are the whole's, slices and all."""
    monkeypatch.setattr(output, "SLICE_BYTES", 700)
    records = [_with_headers(o) for o in range(0, 300, 3)]
    whole = _write(tmp_path / "whole", records, log_end_offset=300, segment_bytes=2_000)
    writer = PartitionWriter(
        LocalOutputDirectory(tmp_path / "parts"), log_end_offset=300, segment_bytes=2_000
    )
    held = []
    for start, stop in pairwise([0, *cuts, len(records)]):
        writer.add(output_rows(records[start:stop]))
        held.append(sum(t.num_rows for t in writer._pending))
    parts = writer.close()
    assert max(held) < 40  # about a slice, never the whole partition
    assert [w.name for w in parts] == [p.name for p in whole]
    assert [(tmp_path / "parts" / w.name).read_bytes() for w in parts] == [
        p.read_bytes() for p in whole
    ]


def test_a_partition_with_no_record_left_is_its_log_end_alone(tmp_path: Path) -> None:
    (written,) = PartitionWriter(LocalOutputDirectory(tmp_path), log_end_offset=42).close()
    (batch,) = SegmentReader(LocalInputFile(tmp_path / written.name))
    assert (batch.base_offset, batch.last_offset, list(batch.records())) == (41, 41, [])


def test_a_segment_holds_its_batches_last_offsets(tmp_path: Path) -> None:
    """As Kafka rolls a segment when a batch's last offset would not fit its 32-bit relative
    offsets: a first batch ending past 2**31 - 1 above the log start starts its own segment."""
    records = [out(o) for o in range(2**31 - 10, 2**31 + 10)]
    (path,) = _write(tmp_path, records, log_end_offset=2**31 + 10)
    assert path.name == f"{2**31 - 10:020d}.log"
    assert [r.offset for b in SegmentReader(LocalInputFile(path)) for r in b.records()] == [
        r.offset for r in records
    ]
