"""Damaged input through the whole job: each kind of damage is isolated to its partition (marked
uncleanable with the file, the position and the reason), nothing already compacted is lost, the
other partitions come out exactly as a run without the damaged ones, and a restart neither
crashes nor changes anything."""

from __future__ import annotations

import random
import shutil
import struct
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.format.attributes import Compression
from segcompact.format.batch import LENGTH_OFFSET, V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record
from segcompact.spark.job import Compactor
from segcompact.spark.table_reader import SparkSql
from segcompact.status import read_status
from tests.e2e.harness import native_state
from tests.support.config import write_config

pytestmark = pytest.mark.spark

NOW_MS = 1_800_000_000_000


def _batch(first: int, n: int, tag: bytes, **kwargs: Any) -> bytes:
    records = [
        Record(first + i, 1_000 + first + i, b"k%d" % (i % 7), tag + b"%d" % i) for i in range(n)
    ]
    return build_batch(records, **kwargs)


def _segment(directory: Path, base: int, data: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    path.write_bytes(data)
    return path


def _bomb(first: int) -> bytes:
    """A zstd batch of one record whose value inflates past the reader's 256 MiB limit."""
    record = Record(first, 1_000, b"k", b"\x00" * (300 << 20))
    return build_batch([record], compression=Compression.ZSTD)


# Each damaged partition has a good first segment (compacted by the first run) and its damage in
# a later one, whose first batch is already bad: the partition's state must not change.
def _damage(root: Path) -> dict[str, str]:
    """Write the damaged segments; return each damaged topic's expected reason."""
    flipped = bytearray(_batch(10, 5, b"f"))
    flipped[V2_HEADER_SIZE + 3] ^= 0x40
    _segment(root / "flipped-0", 10, bytes(flipped))
    _segment(root / "truncated-0", 10, _batch(10, 5, b"t")[:-9])
    _segment(root / "garbage-0", 10, random.Random(7).randbytes(64) + b"\x00" * 40)
    _segment(root / "backwards-0", 10, _batch(3, 5, b"b", base_offset=3))
    oversized = bytearray(_batch(10, 5, b"o"))
    struct.pack_into(">i", oversized, LENGTH_OFFSET, 0x7FFFFFF0)
    _segment(root / "oversized-0", 10, bytes(oversized))
    _segment(root / "bomb-0", 10, _bomb(10))
    # Offsets going backwards inside a segment: its first batch is good and merged.
    reordered = _batch(10, 5, b"r") + _batch(12, 3, b"r", base_offset=12)
    _segment(root / "reordered-0", 10, reordered)
    return {
        "reordered": "offset 12 is not past the previous batch's last offset 14",
        "flipped": "CRC mismatch",
        "truncated": "runs past the end of the file",
        "garbage": "corrupt batch",
        "backwards": "offset 3 is below the segment's base offset 10",
        "oversized": "runs past the end of the file",
        "bomb": "more than 268435456 bytes",
    }


def _good(root: Path, topic: str, tag: bytes) -> None:
    _segment(root / f"{topic}-0", 0, _batch(0, 10, tag))


def _config(work: Path, root: Path) -> CompactorConfig:
    return load_config(write_config(work, [root], rolled_only=False))


def test_damage_stays_in_its_partition_and_a_restart_changes_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, outside = tmp_path / "in", tmp_path / "outside"
    damaged = ["flipped", "truncated", "garbage", "backwards", "oversized", "bomb", "reordered"]
    for topic in damaged:
        _good(root, topic, topic.encode())
    _good(root, "healthy", b"h")
    config = _config(tmp_path / "job", root)
    clock = ManualClock(NOW_MS)
    Compactor(spark, config, clock).run_once()
    before = native_state(config)

    reasons = _damage(root)
    _segment(root / "healthy-0", 10, _batch(10, 6, b"h2"))
    # Not partitions: a directory not named <topic>-<int>, an empty segment, and a symlink out
    # of the root to a partition of good records.
    _segment(root / "not_a_partition", 0, _batch(0, 3, b"n"))
    _segment(root / "healthy-0", 16, b"")
    _segment(outside / "escaped-0", 0, _batch(0, 3, b"e"))
    (root / "escaped-0").symlink_to(outside / "escaped-0")

    Compactor(spark, config, clock).run_once()
    after = native_state(config)
    status = {r["topic"]: r for r in read_status(config, NOW_MS, partial(SparkSql, spark))}
    for topic, reason in reasons.items():
        line = status[topic]["uncleanable"]
        assert line is not None and reason in line, (topic, line)
        assert f"{root / f'{topic}-0' / f'{10:020d}.log'}" in line, (topic, line)
        if topic != "reordered":  # the damage is in the first batch: nothing more merged
            mine = {k: v for k, v in after.items() if k[0] == topic}
            assert mine == {k: v for k, v in before.items() if k[0] == topic}, topic
    assert status["healthy"]["uncleanable"] is None
    assert {k[0] for k in after} == {*damaged, "healthy"}  # nothing escaped or misnamed

    # The healthy partition exactly as a job that never saw the damaged ones, and the reordered
    # one as a job that saw its segments up to the bad batch.
    alone = tmp_path / "alone"
    shutil.copytree(root / "healthy-0", alone / "healthy-0")
    _good(alone, "reordered", b"reordered")
    _segment(alone / "reordered-0", 10, _batch(10, 5, b"r"))
    clean = _config(tmp_path / "clean", alone)
    Compactor(spark, clean, clock).run_once()
    assert {k: v for k, v in after.items() if k[0] in ("healthy", "reordered")} == native_state(
        clean
    )

    # A restart reads nothing new and fails on nothing: no crash loop, no change.
    Compactor(spark, config, clock).run_once()
    assert native_state(config) == after


def test_segments_that_overlap_with_the_same_records_read_as_one_log(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Not damage: segments whose offsets overlap but whose records agree (a replica's log dir
    that rolled elsewhere, copies taken before and after Kafka's cleaner) are one log; a record
    merged twice changes nothing."""
    first, second, third = (_batch(n, 10, b"o") for n in (0, 10, 20))
    root, alone = tmp_path / "in", tmp_path / "alone"
    _segment(root / "overlap-0", 0, first + second)
    _segment(root / "overlap-0", 10, second + third)  # offsets 10..19 are in both
    _segment(alone / "overlap-0", 0, first + second)
    _segment(alone / "overlap-0", 20, third)
    clock = ManualClock(NOW_MS)
    overlapping, clean = _config(tmp_path / "job", root), _config(tmp_path / "clean", alone)
    for config in (overlapping, clean):
        Compactor(spark, config, clock).run_once()
    assert native_state(overlapping) == native_state(clean)
    [row] = read_status(overlapping, NOW_MS, partial(SparkSql, spark))
    assert row["uncleanable"] is None and row["log_end_offset"] == 30
