"""Re-materialisation and delete-records on Spark and Delta, checked against the model."""

from __future__ import annotations

import logging
import os
import random
import re
from functools import partial
from pathlib import Path

import pytest
from deltalake import DeltaTable
from kafka.record.memory_records import MemoryRecords
from pyspark.sql import SparkSession

from segcompact.compaction.delete_records import OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION
from segcompact.format.attributes import Compression
from segcompact.format.segment import SegmentReader
from segcompact.publication import VERSIONS
from segcompact.samples import generate_partition
from segcompact.spark import materialize
from segcompact.spark.delete_records import delete_records
from segcompact.spark.table_reader import SparkReader, SparkSql
from segcompact.spark.tables import Table, session_settings
from segcompact.status import read_status
from segcompact.storage import LocalInputFile
from tests.spark.test_compactor import MIN_LAG_MS, RETENTION_MS, START_MS, Scenario
from tests.support.model import ReferenceModel

pytestmark = pytest.mark.spark


def output(tmp: Path, topic: str, partition: int) -> list[tuple[int, bytes | None, bytes | None]]:
    d = tmp / "out" / f"{topic}-{partition}"
    return [
        (r.offset, r.key, r.value)
        for log in sorted(d.glob("*.log"))
        for b in SegmentReader(LocalInputFile(log))
        for r in b.records()
    ]


def last_offset(tmp: Path, topic: str, partition: int) -> int:
    d = tmp / "out" / f"{topic}-{partition}"
    return max(b.last_offset for log in d.glob("*.log") for b in SegmentReader(LocalInputFile(log)))


def expected(
    model: ReferenceModel, topic: str, partition: int
) -> list[tuple[int, bytes, bytes | None]]:
    rows = [v for k, v in model.state.items() if k[0] == topic and k[1] == partition]
    return sorted((v.offset, v.key, v.value) for v in rows)


def test_materialised_segments_hold_the_state_and_follow_the_triggers(
    spark: SparkSession, tmp_path: Path
) -> None:
    rnd = random.Random(99)
    s = Scenario(spark, tmp_path)
    segments = generate_partition(rnd, codec=Compression.ZSTD, records=200)
    s.arrive([("by-offset", 0, seg) for seg in segments])
    # Dirty ratio 1.0 with min.compaction.lag.ms 0: due at once; written by run_once's upkeep.
    assert output(tmp_path, "by-offset", 0) == expected(s.model, "by-offset", 0)
    assert last_offset(tmp_path, "by-offset", 0) == s.model.log_end[("by-offset", 0)] - 1
    link = tmp_path / "out" / "by-offset-0"
    assert link.is_symlink() and _version_of(link) == "v1"
    logs = sorted(link.glob("*.log"))
    batches = [b for log in logs for b in SegmentReader(LocalInputFile(log))]
    assert all(b.compression is Compression.ZSTD for b in batches)  # producer: keep the codec
    horizons = {b.delete_horizon_ms for b in batches if b.delete_horizon_ms is not None}
    assert horizons == {START_MS + RETENTION_MS}
    # kafka-python reads the published files.
    memory = MemoryRecords(logs[0].read_bytes())
    assert memory.next_batch() is not None

    # Past the horizon, with no input: tombstones leave state and a new version is published.
    s.clock.advance(RETENTION_MS)
    s.arrive([])
    assert _version_of(link) == "v2"
    assert output(tmp_path, "by-offset", 0) == expected(s.model, "by-offset", 0)
    assert all(value is not None for _, _, value in output(tmp_path, "by-offset", 0))
    assert _versions(tmp_path, "by-offset-0") == ["v2"]

    # KIP-107: move the log start offset; errors for an unknown partition and past the end.
    end = s.model.log_end[("by-offset", 0)]
    outcomes = delete_records(
        spark,
        s.compactor.tables,
        {("by-offset", 0): 100, ("nope", 0): 1, ("by-offset", 1): 5},
        s.clock.now_ms(),
    )
    assert outcomes[("by-offset", 0)].low_watermark == 100
    assert outcomes[("nope", 0)].error == UNKNOWN_TOPIC_OR_PARTITION
    assert outcomes[("by-offset", 1)].error == UNKNOWN_TOPIC_OR_PARTITION
    again = delete_records(spark, s.compactor.tables, {("by-offset", 0): 50}, s.clock.now_ms())
    assert again[("by-offset", 0)].low_watermark == 100  # never moves back
    past = delete_records(spark, s.compactor.tables, {("by-offset", 0): end + 1}, s.clock.now_ms())
    assert past[("by-offset", 0)].error == OFFSET_OUT_OF_RANGE
    s.model.delete_records("by-offset", 0, 100)
    s.arrive([])  # the moved log start triggers a new version
    assert _version_of(link) == "v3"
    assert output(tmp_path, "by-offset", 0) == expected(s.model, "by-offset", 0)
    assert min(o for o, _, _ in output(tmp_path, "by-offset", 0)) >= 100
    s.check()


def test_a_crashed_version_leaves_the_published_one_readable(
    spark: SparkSession, tmp_path: Path
) -> None:
    s = Scenario(spark, tmp_path)
    segments = generate_partition(random.Random(5), records=60)
    s.arrive([("by-flag", 0, seg) for seg in segments])
    before = output(tmp_path, "by-flag", 0)
    # A writer that died half-way through version 2 leaves a partial staging directory.
    staging = tmp_path / "out" / VERSIONS / "by-flag-0" / "v2.tmp"
    staging.mkdir()
    (staging / "00000000000000000000.log").write_bytes(b"\x00" * 10)
    assert output(tmp_path, "by-flag", 0) == before
    results = s.compactor.materializer.run(force=True)
    assert [(r["topic"], r["version"]) for r in results if r["topic"] == "by-flag"] == [
        ("by-flag", 2)
    ]
    assert output(tmp_path, "by-flag", 0) == before
    assert _versions(tmp_path, "by-flag-0") == ["v2"]
    # KIP-87's attribute mode: tombstones are written back with attribute bit 0, as read.
    flagged = {
        r.offset: r.attributes & 1
        for log in (tmp_path / "out" / "by-flag-0").glob("*.log")
        for b in SegmentReader(LocalInputFile(log))
        for r in b.records()
    }
    tombstones = {v.offset for v in s.model.state.values() if v.topic == "by-flag" and v.tombstone}
    assert tombstones and {o for o, bit in flagged.items() if bit} == tombstones


def test_records_younger_than_the_lag_stay_raw_until_they_may_be_compacted(
    spark: SparkSession, tmp_path: Path
) -> None:
    s = Scenario(spark, tmp_path)
    # Timestamps 1,000,000 + 100 ms per offset; segments of 24 records.
    segments = generate_partition(random.Random(11), ordered_timestamps=True)
    s.arrive([("by-age", 0, seg) for seg in segments])
    s.check()
    # Records after START_MS - MIN_LAG_MS (offset 51 on) are young: their segment (base 48) and
    # every later one stay raw; what is before is compacted. Due by the dirty ratio, as the
    # first record is older than the lag.
    young = s.model.young[("by-age", 0)]
    assert START_MS - MIN_LAG_MS == 1_000_000 + 100 * 50
    assert min(young) == 48 and max(young) == 119
    out = output(tmp_path, "by-age", 0)
    assert out == s.model.output("by-age", 0)
    raw_keys = [k for o, k, _ in out if o >= 48]
    assert len(raw_keys) > len(set(raw_keys)), "superseded young records must still be there"
    link = tmp_path / "out" / "by-age-0"
    assert _version_of(link) == "v1"
    (status,) = [
        r
        for r in read_status(s.config, s.clock.now_ms(), partial(SparkSql, spark))
        if r["topic"] == "by-age"
    ]
    assert status["young_records"] == len(young) and status["due"] is None

    # No input; the newest record ages past the lag, and the oldest raw one past
    # max.compaction.lag.ms: everything is compacted and re-materialised.
    s.clock.advance(7_000)
    s.arrive([])
    s.check()
    assert not s.model.young
    assert _version_of(link) == "v2"
    assert output(tmp_path, "by-age", 0) == s.model.output("by-age", 0)


def test_both_reads_of_the_due_partitions_write_the_same_segments(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Where delta-rs opens the tables, each due partition is read in its own task by it (in
    offset order, deletion vectors applied); else Spark reads the rows, shuffles and sorts them,
    and streams a task's rows a batch at a time: batches holding the end of one partition and
    the start of the next, and partitions spread over many batches. Both write each partition
    whole, the same bytes."""
    s = Scenario(spark, tmp_path)
    rnd = random.Random(7)
    partitions = [("by-offset", 0), ("by-offset", 1), ("by-flag", 0)]
    logs = {tp: generate_partition(rnd, records=80) for tp in partitions}
    young = generate_partition(rnd, ordered_timestamps=True)  # raw rows too
    s.arrive([(*tp, seg) for tp, segs in logs.items() for seg in segs[:2]])
    # Keys updated by a later batch: the state's MERGE leaves deletion vectors.
    s.arrive(
        [(*tp, seg) for tp, segs in logs.items() for seg in segs[2:]]
        + [("by-age", 0, seg) for seg in young]
    )
    history = DeltaTable(s.config.state.table).history()
    assert any(int(h["operationMetrics"].get("numTargetDeletionVectorsAdded", 0)) for h in history)
    written = [*partitions, ("by-age", 0)]

    def materialise() -> dict[tuple[str, int], dict[str, bytes]]:
        results = s.compactor.materializer.run(force=True)
        assert sorted((r["topic"], r["partition"]) for r in results) == sorted(written)
        by_age = next(r for r in results if r["topic"] == "by-age")
        assert by_age["dirty_bytes"] > 0 and by_age["first_dirty"] is not None
        for topic, partition in written:
            assert output(tmp_path, topic, partition) == s.model.output(topic, partition)
        return {tp: _files(tmp_path, *tp) for tp in written}

    by_delta_rs = materialise()
    # Small partitions share a write task: all of them in one, read by one query.
    monkeypatch.setattr(materialize, "groups", lambda plans, tasks: [list(plans)])
    assert materialise() == by_delta_rs
    # DataFusion's sort out of memory (a partition too large to merge its spills in it): each
    # such partition is written again, read by Spark, in a fresh version directory.
    monkeypatch.setattr(materialize, "SORT_MEMORY", "1K")
    with caplog.at_level(logging.WARNING, logger="segcompact.spark.materialize"):
        assert materialise() == by_delta_rs
    failed = re.findall(r"Spark does: ([\w-]+-\d): External error: Not enough memory", caplog.text)
    assert sorted(failed) == sorted(f"{t}-{p}" for t, p in written)
    # A store delta-rs is not given: Spark reads the tables.
    monkeypatch.setattr(Table, "reader", lambda self, spark: SparkReader(spark, self.name))
    one_task_small_batches = {
        "spark.sql.execution.arrow.maxRecordsPerBatch": "7",
        "spark.sql.shuffle.partitions": "1",
        "spark.sql.adaptive.enabled": "false",
    }
    with session_settings(spark, one_task_small_batches):
        assert materialise() == by_delta_rs
    s.check()


def _files(tmp: Path, topic: str, partition: int) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in (tmp / "out" / f"{topic}-{partition}").iterdir()}


def _version_name(directory: str) -> str:
    """``v2`` for a version directory ``v2-<attempt>``."""
    return directory.split("-", 1)[0]


def _versions(tmp_path: Path, partition: str) -> list[str]:
    """The versions whose directories are under the output's ``.versions/<partition>``."""
    return [_version_name(n) for n in os.listdir(tmp_path / "out" / VERSIONS / partition)]


def _version_of(link: Path) -> str:
    """The version a published symlink points to."""
    return _version_name(os.path.basename(os.readlink(link)))
