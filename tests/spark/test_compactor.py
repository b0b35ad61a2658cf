"""The streaming compactor on real Spark and Delta, held to the pure reference model."""

from __future__ import annotations

import dataclasses
import logging
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.control import marker
from segcompact.format.record import Record
from segcompact.samples import SampleSegment, generate_partition
from segcompact.spark.job import Compactor
from segcompact.spark.small_files import MIN_FILES
from segcompact.spark.tables import Table, session_settings
from segcompact.storage import LocalInputFile
from tests.e2e.harness import delta_rows
from tests.support import config as support_config
from tests.support.model import ReferenceModel, StateRow, read_log_records
from tests.support.spark import jobs_started

pytestmark = pytest.mark.spark

TOPICS = {
    "by-offset": ("offset", "null-value", Compression.LZ4, False),
    "by-time": ("timestamp", "null-value", Compression.NONE, False),
    "by-version": ("header", "header", Compression.ZSTD, False),
    "by-flag": ("offset", "attribute", Compression.NONE, False),
    "txns": ("offset", "null-value", Compression.GZIP, True),
}
RETENTION_MS = 10_000
START_MS = 1_100_000  # after every generated record timestamp (see segcompact.samples)
# "by-age" keeps records younger than MIN_LAG_MS raw and must compact them by MAX_LAG_MS.
MIN_LAG_MS = 95_000
MAX_LAG_MS = 100_000


def write_config(tmp: Path) -> CompactorConfig:
    topics: dict[str, dict[str, object]] = {}
    for name, (strategy, mode, _, _) in TOPICS.items():
        topics[name] = {"compaction.strategy": strategy, "compaction.tombstone.mode": mode}
        if strategy == "header":
            topics[name]["compaction.strategy.header"] = "v"
    topics["by-age"] = {"min.compaction.lag.ms": MIN_LAG_MS, "max.compaction.lag.ms": MAX_LAG_MS}
    return load_config(
        support_config.write_config(
            tmp,
            [tmp / "in"],
            rolled_only=False,
            defaults={"delete.retention.ms": RETENTION_MS},
            topics=topics,
        )
    )


def state_rows(config: CompactorConfig) -> dict[tuple[str, int, bytes], Any]:
    """The state table's rows, read by delta-rs (milliseconds, where Spark takes a job)."""
    return {
        (r["topic"], r["partition"], r["key"]): (
            r["offset"],
            _ms(r["timestamp"]),
            r["timestampType"],
            r["value"],
            tuple((h["key"], h["value"]) for h in r["headers"]),
            r["order_value"],
            r["tombstone"],
            _ms(r["delete_horizon"]),
            _ms(r["cleaned_at"]),
        )
        for r in delta_rows(config, config.state.table).to_pylist()
    }


def model_rows(model: ReferenceModel) -> dict[tuple[str, int, bytes], Any]:
    def row(s: StateRow) -> tuple[Any, ...]:
        return (
            s.offset,
            s.timestamp,
            s.timestamp_type,
            s.value,
            s.headers,
            s.order_value,
            s.tombstone,
            s.delete_horizon,
            s.cleaned_at,
        )

    return {k: row(v) for k, v in model.state.items()}


def _ms(value: Any) -> int | None:
    return None if value is None else round(value.timestamp() * 1000)


class Scenario:
    """Segments that arrive in steps, applied to Spark and to the model alike."""

    def __init__(self, spark: SparkSession, tmp: Path) -> None:
        self.spark = spark
        self.tmp = tmp
        self.config = write_config(tmp)
        self.clock = ManualClock(START_MS)
        self.model = ReferenceModel(self.config.topic)
        self.compactor = Compactor(spark, self.config, self.clock)

    def arrive(self, segments: list[tuple[str, int, SampleSegment]]) -> None:
        records = []
        for topic, partition, seg in segments:
            path = seg.write(self.tmp / "in" / f"{topic}-{partition}")
            records.extend(read_log_records(LocalInputFile(path), topic, partition))
        self.compactor.run_once()
        self.model.apply(records, self.clock.now_ms())
        self.model.expire(self.clock.now_ms())

    def check(self) -> None:
        assert state_rows(self.config) == model_rows(self.model)
        young = delta_rows(self.config, self.config.state.young_table).to_pylist()
        assert sorted((r["topic"], r["partition"], r["offset"]) for r in young) == sorted(
            (*tp, offset) for tp, records in self.model.young.items() for offset in records
        )


def one_per_key(s: Scenario) -> dict[tuple[str, int], bool]:
    return {(r["topic"], r["partition"]): r["one_per_key"] for r in s.compactor.merger.last_stats}


def test_streaming_state_matches_the_reference_model(spark: SparkSession, tmp_path: Path) -> None:
    rnd = random.Random(20261122)
    logs = {
        (topic, p): generate_partition(rnd, codec=codec, transactions=txn)
        for topic, (_, _, codec, txn) in TOPICS.items()
        for p in (0, 1)
    }
    s = Scenario(spark, tmp_path)
    # Step 1: every partition's first two segments, but "by-time" and "by-version" send their
    # second segment late (out-of-order arrival).
    late = {("by-time", 0), ("by-version", 1)}
    first = [(t, p, segs[0]) for (t, p), segs in logs.items()]
    first += [(t, p, segs[1]) for (t, p), segs in logs.items() if (t, p) not in late]
    s.arrive(first)
    s.check()
    assert s.model.pending, "the generated log should leave a transaction undecided"
    # With transactions in the batch, the new partitions' files were read as rows and removed:
    # every data file left is one the state's log names.
    state = Path(s.config.state.table)
    named = set(pa.table(DeltaTable(str(state)).get_add_actions(flatten=True))["path"].to_pylist())
    assert {str(f.relative_to(state)) for f in state.rglob("*.parquet")} == named
    # Step 2, later: the rest, with the late segments after newer ones.
    s.clock.advance(3_000)
    rest = [(t, p, seg) for (t, p), segs in logs.items() for seg in segs[2:]]
    s.arrive(rest + [(t, p, logs[(t, p)][1]) for t, p in sorted(late)])
    s.check()
    tombstones = [v for v in s.model.state.values() if v.tombstone]
    assert tombstones and {v.delete_horizon for v in tombstones} >= {START_MS + RETENTION_MS}
    # Step 3: no input, the clock passes the first horizons: expiry alone changes state.
    s.clock.advance(RETENTION_MS)
    before = len(s.model.state)
    s.arrive([])
    s.check()
    assert len(s.model.state) < before


def test_same_segment_twice_changes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    rnd = random.Random(7)
    s = Scenario(spark, tmp_path)
    segments = generate_partition(rnd, codec=Compression.SNAPPY)
    s.arrive([("by-offset", 0, seg) for seg in segments])
    before = state_rows(s.config)
    # The same files again under a second root: new paths, same records.
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "in", copy)
    config = write_config(tmp_path)
    twice = Compactor(
        spark,
        CompactorConfig(
            source=type(config.source)(paths=(str(tmp_path / "in"), str(copy)), rolled_only=False),
            state=config.state,
            output=config.output,
            # A checkpoint of its own: both copies in one batch.
            stream=dataclasses.replace(config.stream, checkpoint=str(tmp_path / "again")),
            defaults=config.defaults,
            topics=config.topics,
        ),
        s.clock,
    )
    twice.run_once()
    assert state_rows(s.config) == before
    # Two copies of a log are not reduced together in their task: the merge reduced them.
    assert {r["one_per_key"] for r in twice.merger.last_stats} == {False}
    assert {r["segments"] for r in twice.merger.last_stats} == {2 * len(segments)}


def test_a_steady_batch_makes_two_delta_commits_and_an_idle_run_no_spark_job(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Scenario(spark, tmp_path)
    # Distinct keys: the compacted output stays large, so one more segment is not due.
    segments = generate_partition(random.Random(11), records=600, keys=600, codec=Compression.LZ4)
    other = generate_partition(random.Random(12), codec=Compression.LZ4)
    # Creates the tables, materialises both partitions.
    s.arrive([("by-offset", 0, seg) for seg in segments[:-1]] + [("by-offset", 1, other[0])])
    s.check()
    # A partition's segments in one task are reduced together: one candidate per key.
    assert one_per_key(s) == {("by-offset", 0): True, ("by-offset", 1): True}
    tables = s.compactor.tables.all()
    before = {name: t.reader(spark).version() for name, t in tables.items()}
    # The first batch, on the tables as created (version 0 each): the state's append, the
    # partitions table's, and the materialiser's record of the partitions it published.
    assert before == {"state": 1, "young": 0, "partitions": 2, "pending": 0, "ledger": 0}
    # The partitions table's rows are few: delta-rs merged them, not the JVM.
    written = DeltaTable(s.config.state.partitions_table).history()
    assert {h["engineInfo"].split(":")[0] for h in written if h["version"] > 0} == {"delta-rs"}
    # The new partitions' winners never reached the JVM: their tasks wrote them as the state's
    # files, and delta-rs committed them (``spark.state_files``).
    (added,) = DeltaTable(s.config.state.table).history(limit=1)
    assert (added["engineInfo"].split(":")[0], added["operation"]) == ("delta-rs", "WRITE")

    s.arrive([("by-offset", 0, segments[-1])])  # one more segment, nothing due

    s.check()
    assert one_per_key(s) == {("by-offset", 0): True}  # its rows are the winners as they are
    commits = {name: t.reader(spark).version() - before[name] for name, t in tables.items()}
    assert commits == {"state": 1, "young": 0, "partitions": 1, "pending": 0, "ledger": 0}
    # The state MERGE read only the batch's partition's files: its metrics say so.
    state = DeltaTable(s.config.state.table)
    (merge,) = state.history(limit=1)
    assert merge["operation"] == "MERGE"
    assert "by-offset" in str(merge["operationParameters"]["predicate"])
    # Deletion vectors: the rows it replaced are marked deleted in the partition's one file,
    # none is copied, and no file is rewritten.
    metrics = {k: int(v) for k, v in merge["operationMetrics"].items()}
    assert metrics["numTargetDeletionVectorsAdded"] == 1
    assert metrics["numTargetFilesRemoved"] == metrics["numTargetRowsCopied"] == 0
    assert metrics["numTargetRowsUpdated"] + metrics["numTargetRowsDeleted"] > 0
    assert state.metadata().partition_columns == ["topic"]

    # A restart with no new segment and nothing due: no streaming query, no Spark job, no
    # Delta commit.
    versions = {name: t.reader(spark).version() for name, t in tables.items()}
    jobs = jobs_started(spark)
    with caplog.at_level(logging.INFO, logger="segcompact"):
        Compactor(spark, s.config, s.clock).run_once()
    assert "query: no segment to read" in caplog.text
    assert jobs_started(spark) == jobs
    assert {name: t.reader(spark).version() for name, t in tables.items()} == versions


def test_a_topic_is_compacted_once_merges_leave_enough_small_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    s = Scenario(spark, tmp_path)
    segments = generate_partition(random.Random(14), records=120, keys=60)
    other = generate_partition(random.Random(15), records=24)
    state = s.config.state.table

    def files(topic: str) -> int:
        return len(DeltaTable(state).file_uris(file_pruning_predicate=[("topic", "=", topic)]))

    s.arrive(
        [("by-offset", 0, segments[0]), ("by-offset", 1, segments[0]), ("by-flag", 0, other[0])]
    )
    first = files("by-offset")  # one file a writer task: one or two
    with session_settings(spark, {MIN_FILES: str(first + 2)}):  # 50 by default
        s.arrive([("by-offset", 0, segments[1])])  # one MERGE: one more file, not yet
        assert (files("by-offset"), files("by-flag")) == (first + 1, 1)
        s.arrive([("by-offset", 0, segments[2])])  # another: the topic compacted into one
    s.check()
    assert (files("by-offset"), files("by-flag")) == (1, 1)
    history = sorted(DeltaTable(state).history(), key=lambda h: h["version"])
    assert [h["operation"] for h in history[1:]] == ["WRITE", "MERGE", "MERGE", "OPTIMIZE"]
    predicate = history[-1]["operationParameters"]["predicate"]
    assert "by-offset" in predicate and "by-flag" not in predicate
    # Not Delta's auto compaction, which compacts a partition at a JVM's first write to it.
    assert (
        "delta.autoOptimize.autoCompact" not in s.compactor.tables.state.reader(spark).properties()
    )


def test_graduation_cut_short_after_its_merge_is_finished_by_the_next(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Scenario(spark, tmp_path)
    segments = generate_partition(random.Random(3), ordered_timestamps=True)
    s.arrive([("by-age", 0, seg) for seg in segments])
    assert s.model.young
    s.clock.advance(7_000)  # every young record may now be compacted
    young = s.compactor.tables.young
    opened = Table.delta

    def crash(table: Table, session: SparkSession) -> Any:
        if table == young:  # graduation's DELETE, after its state MERGE
            raise RuntimeError("killed")
        return opened(table, session)

    monkeypatch.setattr(Table, "delta", crash)
    with pytest.raises(RuntimeError, match="killed"):
        s.compactor.merger.graduate(s.clock.now_ms())
    monkeypatch.undo()
    assert delta_rows(s.config, young.name).num_rows > 0  # merged into state, not yet deleted
    s.compactor.upkeep()
    s.model.graduate(s.clock.now_ms())
    s.model.expire(s.clock.now_ms())
    s.check()
    assert not s.model.young and delta_rows(s.config, young.name).num_rows == 0


def test_the_backlog_of_a_run_is_its_segments_bytes_and_each_batch_moves_through_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``run --once``'s progress: the bytes of the segments it admits, before it starts."""
    config = load_config(
        support_config.write_config(
            tmp_path, [tmp_path / "in"], rolled_only=False, stream={"max_segments_per_batch": 1}
        )
    )
    segments = generate_partition(random.Random(11))
    sizes = [seg.write(tmp_path / "in" / "t-0").stat().st_size for seg in segments[:2]]
    compactor = Compactor(spark, config, ManualClock(START_MS))

    backlog = compactor.backlog()
    assert backlog.total == sum(sizes)
    done: list[int] = []
    compactor.run_once(on_batch=lambda batch: done.append(backlog.done(batch)))
    assert done == [sizes[0], sum(sizes)]  # one segment a batch

    assert compactor.backlog().total == 0 and compactor.backlog().empty  # all read, committed
    # A run killed after planning its last batch and before committing it reads it again.
    commits = Path(config.stream.checkpoint) / "query" / "commits"
    for name in ("1", ".1.crc"):  # as a kill before the commit leaves it
        (commits / name).unlink()
    again = compactor.backlog()
    assert again.in_flight and not again.empty and again.total == sizes[1]
    done.clear()
    compactor.run_once(on_batch=lambda batch: done.append(again.done(batch)), backlog=again)
    assert done == [sizes[1]] and (commits / "1").exists()

    later = segments[2].write(tmp_path / "in" / "t-0").stat().st_size
    backlog = compactor.backlog()
    assert backlog.total == later
    done.clear()
    compactor.run_once(on_batch=lambda batch: done.append(backlog.done(batch)))
    assert done == [later]


def test_a_pending_table_of_an_earlier_version_is_classified_once_and_decided_as_the_model(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A pending table written before the source's task classified records lacks the rules'
    columns: opening the tables computes them for its rows (by ``compaction.rules``, in one
    commit), and a commit marker arriving then decides its records as the model does."""
    s = Scenario(spark, tmp_path)
    at = 1_000_000
    records = [
        Record(0, at, b"versioned", b"one", (("v", struct.pack(">q", -7)),)),
        Record(1, at, b"deleted", b"payload", (("tombstone", b"true"),)),
    ]
    txn = {"is_transactional": True, "producer_id": 7, "producer_epoch": 0}
    s.arrive([("by-version", 0, SampleSegment(0, [build_batch(records, **txn)]))])
    assert s.model.pending and not s.model.state
    # The pending table as an earlier version left it.
    pending = s.config.state.pending_table
    old = spark.read.format("delta").load(pending).drop("order_value", "bad_version", "tombstone")
    old.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(pending)
    s.compactor = Compactor(spark, s.config, s.clock)  # opens the tables
    rows = delta_rows(s.config, pending).to_pylist()
    assert {r["offset"]: (r["order_value"], r["bad_version"], r["tombstone"]) for r in rows} == {
        0: (-7, False, False),
        1: (None, False, True),
    }
    version = s.compactor.tables.pending.reader(spark).version()
    s.compactor.tables.ensure(spark)
    assert s.compactor.tables.pending.reader(spark).version() == version  # once
    commit = build_batch([marker(2, True, at)], is_control=True, **txn)
    s.arrive([("by-version", 0, SampleSegment(2, [commit]))])
    s.check()
    assert {k[2]: v.tombstone for k, v in s.model.state.items()} == {
        b"versioned": False,
        b"deleted": True,
    }
