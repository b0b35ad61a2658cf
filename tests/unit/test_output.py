"""Packing compacted records into segments (the materialiser's pure half)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka.record.memory_records import MemoryRecords

from segcompact.compaction.output import OutputRecord, write_partition
from segcompact.format.attributes import Compression
from segcompact.format.segment import read_batches
from segcompact.storage import LocalInputFile, LocalOutputDirectory


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
    written = write_partition(LocalOutputDirectory(directory), records, **settings)
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
    batches = [b for p in paths for b in read_batches(LocalInputFile(p))]
    assert all(b.compression is Compression.LZ4 for b in batches)
    assert [r.offset for b in batches for r in b.records()] == [r.offset for r in records]
    for p in paths:
        assert Path(p).stat().st_size <= 8_000
        first = next(iter(read_batches(LocalInputFile(p))))
        assert Path(p).name == f"{first.base_offset:020d}.log"
        assert Path(p).with_suffix(".index").exists() and Path(p).with_suffix(".timeindex").exists()


def test_tombstone_batches_carry_the_latest_horizon(tmp_path: Path) -> None:
    records = [
        out(1),
        out(2, tombstone=True, horizon=50_000),
        out(3, tombstone=True, horizon=70_000),
    ]
    (path,) = _write(tmp_path, records, log_end_offset=4)
    (batch,) = read_batches(LocalInputFile(path))
    assert batch.delete_horizon_ms == 70_000
    assert [r.timestamp for r in batch.records()] == [1_001, 1_002, 1_003]
    assert batch.records()[1].value is None


def test_log_end_offset_kept_with_an_empty_batch(tmp_path: Path) -> None:
    (path,) = _write(tmp_path, [out(1), out(5)], log_end_offset=10)
    batches = list(read_batches(LocalInputFile(path)))
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
    assert [(b.base_offset, b.last_offset) for b in read_batches(LocalInputFile(path))] == [(6, 6)]


def test_record_past_the_log_end_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="past the log end offset 3"):
        _write(tmp_path, [out(5)], log_end_offset=3)


def test_first_segment_starts_at_the_log_start_offset(tmp_path: Path) -> None:
    paths = _write(tmp_path, [out(50), out(51)], log_end_offset=60, log_start_offset=40)
    assert Path(paths[0]).name == f"{40:020d}.log"
    assert [b.base_offset for b in read_batches(LocalInputFile(paths[0]))] == [50, 59]
