"""The deletion SLA end to end: overwritten and deleted values physically gone by the deadline.

Real Spark and Delta, the injectable clock for the SLA's time, and Delta's own VACUUM (the
tables' file retention is 0, so VACUUM's wall-clock cutoff never waits).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from segcompact.clock import ManualClock
from segcompact.compaction.rules import Rankings
from segcompact.config import CompactorConfig, load_config
from segcompact.delta.sql import DeltaSql
from segcompact.erasure.keyhash import SECRET_VARIABLE, key_hash
from segcompact.erasure.ledger_reads import KeyRows, key_rows, key_views, ledger_rows
from segcompact.erasure.verdict import Held
from segcompact.errors import ConfigError
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.samples import SampleSegment
from segcompact.spark.erasure import Eraser
from segcompact.spark.job import Compactor
from segcompact.spark.ledger import record_deletes
from segcompact.spark.source import NAME, register
from segcompact.spark.table_reader import SparkSql
from segcompact.storage import LocalFileSystem, LocalInputFile
from tests.e2e.harness import delta_rows
from tests.support import config as support_config

pytestmark = pytest.mark.spark

SECRET = "a test secret of enough bytes"
SLA_MS = 3_600_000
RETENTION_MS = 2 * SLA_MS  # delete.retention.ms: the keys outlive the first round
T0 = 1_800_000_000_000
TOPIC = "users"


def write_config(work: Path) -> CompactorConfig:
    return load_config(
        support_config.write_config(
            work,
            [work / "in"],
            rolled_only=False,
            state={"deleted_file_retention_ms": 0},
            defaults={"delete.retention.ms": RETENTION_MS, "gdpr.deletion.sla.ms": SLA_MS},
        )
    )


def segment(base: int, records: list[tuple[bytes, bytes | None]], ts: int) -> SampleSegment:
    batch = build_batch([Record(base + i, ts + i, k, v, (), 0) for i, (k, v) in enumerate(records)])
    return SampleSegment(base, [batch])


def arrive(work: Path, partition: int, seg: SampleSegment) -> None:
    seg.write(work / "in" / f"{TOPIC}-{partition}")


def files(roots: Iterable[str]) -> Iterator[str]:
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                yield os.path.join(folder, name)


def holding(config: CompactorConfig, needle: bytes) -> list[str]:
    """Every file that holds ``needle``: raw bytes, decoded Parquet rows (compressed pages hide
    it from a byte search), decoded output segments (compressed batches too)."""
    found = []
    for path in files(config.owned()):
        with open(path, "rb") as f:
            raw = f.read()
        hit = needle in raw
        if not hit and path.endswith(".parquet"):
            hit = needle in repr(pq.read_table(path).to_pylist()).encode()
        if not hit and path.endswith(".log"):
            for batch in SegmentReader(LocalInputFile(path), verify_crc=False):
                for r in batch.records():
                    hit = hit or needle in (r.key or b"") or needle in (r.value or b"")
        if hit:
            found.append(path)
    return found


def ledger(config: CompactorConfig, kind: str) -> list[dict[str, Any]]:
    """The ledger's rows of ``kind``, read by delta-rs, in Spark's ascending order (nulls
    first) of topic, partition, offset and round."""
    rows = [
        r for r in delta_rows(config, config.state.ledger_table).to_pylist() if r["kind"] == kind
    ]
    order = ("topic", "partition", "offset", "round")
    return sorted(rows, key=lambda r: [(r[c] is not None, r[c]) for c in order])


def _key_rows_by_both_engines(spark: SparkSession, config: CompactorConfig, key: bytes) -> KeyRows:
    """What ``sla`` and ``verify-erasure`` read of partition 0, by delta-rs and by Spark: the
    same."""
    native = DeltaSql.open(key_views(config), config.storage)
    assert native is not None
    on_spark = SparkSql(spark, key_views(config))
    assert ledger_rows(native) == ledger_rows(on_spark)
    hashed = key_hash(SECRET.encode(), TOPIC, 0, key)
    rows = key_rows(native, TOPIC, 0, key, hashed)
    assert rows == key_rows(on_spark, TOPIC, 0, key, hashed)
    return rows


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)


def test_deleted_and_overwritten_values_are_gone_by_the_deadline(
    spark: SparkSession, tmp_path: Path, secret: None
) -> None:
    config = write_config(tmp_path)
    clock = ManualClock(T0)
    compactor = Compactor(spark, config, clock)
    # Partition 0: alpha, overwritten by bravo, then deleted. Partition 1: charlie, deleted,
    # then idle. Another key stays live throughout.
    arrive(tmp_path, 0, segment(0, [(b"user-1", b"MARKER-ALPHA"), (b"user-2", b"live")], T0))
    arrive(tmp_path, 1, segment(0, [(b"user-9", b"MARKER-CHARLIE")], T0))
    compactor.run_once()
    clock.advance(60_000)
    arrive(tmp_path, 0, segment(2, [(b"user-1", b"MARKER-BRAVO")], clock.now_ms()))
    compactor.run_once()
    state_before_delete = DeltaTable(config.state.table).version()
    clock.advance(60_000)
    deleted_at = clock.now_ms()
    arrive(tmp_path, 0, segment(3, [(b"user-1", None)], deleted_at))
    arrive(tmp_path, 1, segment(1, [(b"user-9", None)], deleted_at))
    compactor.run_once()
    for marker in (b"MARKER-ALPHA", b"MARKER-BRAVO", b"MARKER-CHARLIE"):
        assert holding(config, marker), f"{marker!r} should still be on disk before the SLA"
    # Delta's log keeps predicates and commit info as long as its own retention: never a key or
    # a value in them (MERGE conditions name columns, DELETEs name horizons and offsets).
    logs = [p for p in files(config.owned()) if "_delta_log" in p and p.endswith(".json")]
    assert len(logs) > 10
    for path in logs:
        text = Path(path).read_bytes()
        for needle in (b"user-1", b"user-9", b"MARKER"):
            assert needle not in text, (path, needle)
    properties = DeltaTable(config.state.ledger_table).metadata().configuration
    assert properties["delta.deletedFileRetentionDuration"] == "interval 0 milliseconds"

    clock.advance(SLA_MS // 2)  # erasure is due from a quarter of the SLA: the upkeep timer's work
    report = compactor.upkeep()
    assert report.opened is not None and report.completed == [report.opened], report.waiting

    for marker in (b"MARKER-ALPHA", b"MARKER-BRAVO", b"MARKER-CHARLIE"):
        assert holding(config, marker) == [], marker
    assert holding(config, b"live"), "the live value must stay"
    deletes = ledger(config, "delete")
    assert [(d["partition"], d["offset"]) for d in deletes] == [(0, 3), (1, 1)]
    for d in deletes:
        assert d["status"] == "met" and d["breach_stage"] is None
        assert d["key_hash"] == key_hash(
            SECRET.encode(), TOPIC, d["partition"], b"user-1" if d["partition"] == 0 else b"user-9"
        )
        for stage in ("seen", "merged", "purged", "vacuumed", "materialized", "versions_removed"):
            assert d[f"{stage}_at"] is not None, stage
        assert _ms(d["appended_at"]) == deleted_at
        assert _ms(d["deadline"]) == deleted_at + SLA_MS
        assert _ms(d["completed_at"]) <= deleted_at + SLA_MS
        assert d["tombstone_expired_at"] is None
    rounds = ledger(config, "round")
    assert {(r["partition"], r["status"]) for r in rounds} == {(0, "met"), (1, "met")}
    rows = _key_rows_by_both_engines(spark, config, b"user-2")
    assert rows.current == Held(1, tombstone=False) and not rows.ledger  # live, never deleted
    rows = _key_rows_by_both_engines(spark, config, b"user-1")
    assert rows.current == Held(3, tombstone=True)  # its tombstone, till the horizon
    assert [r["offset"] for r in rows.ledger] == [3]
    # The first overwrite started partition 0's clock: its round's append time.
    assert min(_ms(r["appended_at"]) for r in rounds if r["partition"] == 0) == T0
    with pytest.raises(Exception, match=r"(?i)cannot time travel|not.*found|FileNotFound"):
        spark.read.format("delta").option("versionAsOf", state_before_delete).load(
            config.state.table
        ).collect()

    # After the tombstones' horizon, the keys themselves go the same way.
    clock.advance(RETENTION_MS + SLA_MS // 2)
    report = compactor.upkeep()
    assert report.completed, report.waiting
    for key in (b"user-1", b"user-9"):
        assert holding(config, key) == [], key
    assert holding(config, b"user-2"), "the live key must stay"
    for d in ledger(config, "delete"):
        assert d["tombstone_expired_at"] is not None
    # Nothing is due any more: another upkeep opens no round.
    assert compactor.upkeep().opened is None


def test_a_version_that_cannot_be_removed_is_a_breach(
    spark: SparkSession, tmp_path: Path, secret: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write_config(tmp_path)
    clock = ManualClock(T0)

    remove_tree = LocalFileSystem.remove_tree

    def failing(fs: LocalFileSystem, path: str) -> None:
        if os.path.basename(path).startswith("v1-"):
            raise PermissionError(13, "Permission denied", path)
        remove_tree(fs, path)

    monkeypatch.setattr(LocalFileSystem, "remove_tree", failing)
    compactor = Compactor(spark, config, clock)
    arrive(tmp_path, 0, segment(0, [(b"user-1", b"MARKER-ALPHA")], T0))
    compactor.run_once()
    clock.advance(60_000)
    arrive(tmp_path, 0, segment(1, [(b"user-1", None)], clock.now_ms()))
    compactor.run_once()

    clock.advance(SLA_MS // 2)
    report = compactor.upkeep()
    assert report.completed == []
    (row,) = ledger(config, "round")
    assert row["status"] == "pending" and "v1" in row["error"]
    assert row["versions_removed_at"] is None

    clock.advance(SLA_MS)  # past the deadline, still not removable
    compactor.upkeep()
    (row,) = ledger(config, "round")
    assert (row["status"], row["breach_stage"]) == ("breached", "versions_removed")
    assert holding(config, b"MARKER-ALPHA"), "the stuck version still holds the old value"


def test_erasure_interrupted_after_the_merge_completes_after_a_restart(
    spark: SparkSession, tmp_path: Path, secret: None
) -> None:
    config = write_config(tmp_path)
    clock = ManualClock(T0)
    arrive(tmp_path, 0, segment(0, [(b"user-1", b"MARKER-ALPHA")], T0))
    arrive(tmp_path, 0, segment(1, [(b"user-1", None)], T0 + 1))
    Compactor(spark, config, clock).run_once()  # merged; then the job stops before any round

    clock.advance(SLA_MS // 2)
    restarted = Compactor(spark, config, clock)
    report = restarted.upkeep()
    assert report.completed == [report.opened]
    (d,) = ledger(config, "delete")
    # The original append; the record's timestamp is ahead of the clock and buys no time.
    assert d["status"] == "met" and _ms(d["appended_at"]) == T0
    assert holding(config, b"MARKER-ALPHA") == []


def test_a_crash_after_a_round_is_written_opens_no_second_round(
    spark: SparkSession, tmp_path: Path, secret: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between the round's ledger commit and the clearing of the marks it took (found
    by make chaos): the restart clears them and opens no other round."""
    config = write_config(tmp_path)
    clock = ManualClock(T0)
    arrive(tmp_path, 0, segment(0, [(b"user-1", b"MARKER-ALPHA")], T0))
    arrive(tmp_path, 0, segment(1, [(b"user-1", b"MARKER-BRAVO")], T0 + 1))  # an overwrite
    Compactor(spark, config, clock).run_once()
    clock.advance(SLA_MS // 2)

    def killed(self: Eraser, marks: object) -> None:
        raise RuntimeError("killed before the marks were cleared")

    with monkeypatch.context() as m:
        m.setattr(Eraser, "_clear_marks", killed)
        with pytest.raises(RuntimeError, match="killed before"):
            Compactor(spark, config, clock).upkeep(force=True)
    (taken,) = ledger(config, "round")
    assert taken["erasure_mark"] is not None
    report = Compactor(spark, config, clock).upkeep(force=True)
    assert report.opened is None
    assert [r["round"] for r in ledger(config, "round")] == [taken["round"]]
    marks = delta_rows(config, config.state.partitions_table).column("erasure_from")
    assert marks.null_count == len(marks) > 0


def test_a_replayed_batch_adds_its_deletes_to_the_ledger_once(
    spark: SparkSession, tmp_path: Path, secret: None
) -> None:
    """A batch replayed after a crash (same batch id) skips the ledger append it committed;
    the ledger is appended to, never read, to find that out."""
    config = write_config(tmp_path)
    arrive(tmp_path, 0, segment(0, [(b"user-1", b"MARKER-ALPHA"), (b"user-2", None)], T0))
    compactor = Compactor(spark, config, ManualClock(T0))
    register(spark)
    batch = (
        spark.read.format(NAME)
        .option("paths", str(tmp_path / "in"))
        .option("rolledOnly", "false")
        .option("summaries", "true")  # as the job's query reads
        .option("compaction", Rankings.of(config).to_json())
        .load()
    )
    compactor.merger(batch, 0)
    compactor.merger(batch, 0)
    (row,) = ledger(config, "delete")
    assert (row["offset"], row["status"]) == (1, "pending")
    history = DeltaTable(config.state.ledger_table).history()
    assert [h["operation"] for h in history if h["operation"] in ("WRITE", "MERGE")] == ["WRITE"]


def test_graduated_tombstones_get_one_ledger_row_each_however_often_graduation_runs(
    spark: SparkSession, tmp_path: Path, secret: None
) -> None:
    """Records of a lagged topic reach the state when they graduate; their tombstones get a
    ledger row then, inserted only where missing (a redone graduation may cover more rows
    than the one a crash cut short, so no idempotent-write pair can name it)."""
    lag_ms = 60_000
    config = load_config(
        support_config.write_config(
            tmp_path,
            [tmp_path / "in"],
            rolled_only=False,
            state={"deleted_file_retention_ms": 0},
            defaults={
                "delete.retention.ms": RETENTION_MS,
                "gdpr.deletion.sla.ms": SLA_MS,
                "min.compaction.lag.ms": lag_ms,
            },
        )
    )
    clock = ManualClock(T0)
    arrive(tmp_path, 0, segment(0, [(b"user-1", b"MARKER-ALPHA"), (b"user-1", None)], T0))
    compactor = Compactor(spark, config, clock)
    compactor.run_once()
    assert ledger(config, "delete") == [], "young: not in the state yet"

    clock.advance(2 * lag_ms)
    compactor.merger.graduate(clock.now_ms())
    (row,) = ledger(config, "delete")
    assert (row["offset"], row["seen_at"], row["status"]) == (1, None, "pending")
    tombstones = spark.createDataFrame(
        [("users", 0, b"user-1", 1, None, None)],
        "topic string, partition int, key binary, offset long, timestamp timestamp, "
        "delete_horizon timestamp",
    ).withColumn("timestamp", F.timestamp_millis(F.lit(T0 + 1)))
    record_deletes(
        spark,
        compactor.tables.ledger,
        tombstones,
        {"users": config.topic("users")},
        SECRET.encode(),
        state_version=0,
        now=clock.now_ms(),
        batch=None,
    )
    assert [r["offset"] for r in ledger(config, "delete")] == [1]


def test_a_topic_with_an_sla_needs_the_secret(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    with pytest.raises(Exception, match=SECRET_VARIABLE):
        Compactor(spark, write_config(tmp_path), ManualClock(T0))


def _ms(value: Any) -> int:
    return round(value.timestamp() * 1000)


def test_an_append_only_table_is_refused_naming_it(
    spark: SparkSession, tmp_path: Path, secret: None
) -> None:
    config = write_config(tmp_path)
    Compactor(spark, config, ManualClock(T0))
    spark.sql(
        f"ALTER TABLE delta.`{config.state.young_table}` "
        "SET TBLPROPERTIES ('delta.appendOnly' = 'true')"
    )
    with pytest.raises(ConfigError, match=r"young_table: table property delta.appendOnly = true"):
        Compactor(spark, config, ManualClock(T0))


def test_deletion_vectors_are_purged_before_vacuum(
    spark: SparkSession, tmp_path: Path, secret: None
) -> None:
    """With deletion vectors (the state table's default, Databricks' on every table), a MERGE
    marks the old row deleted and leaves it in its file: only the round's purge (a REORG commit,
    ``spark.purge``) rewrites the file, and VACUUM then removes it."""
    config = write_config(tmp_path)
    clock = ManualClock(T0)
    compactor = Compactor(spark, config, clock)
    for table in config.state.tables():
        spark.sql(
            f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
        )
    arrive(
        tmp_path,
        0,
        segment(
            0, [(b"user-1", b"MARKER-ALPHA")] + [(b"other-%d" % i, b"x") for i in range(50)], T0
        ),
    )
    compactor.run_once()
    clock.advance(60_000)
    arrive(tmp_path, 0, segment(51, [(b"user-1", b"MARKER-BRAVO")], clock.now_ms()))
    compactor.run_once()
    dv_files = [p for p in files([config.state.table]) if p.endswith(".bin")]
    assert dv_files, "the overwrite should have written a deletion vector"
    assert holding(config, b"MARKER-ALPHA")

    clock.advance(SLA_MS // 2)
    report = compactor.upkeep()
    assert report.completed == [report.opened], report.waiting
    assert holding(config, b"MARKER-ALPHA") == []
    assert holding(config, b"MARKER-BRAVO")  # the live value
    history = DeltaTable(config.state.table).history()
    assert any(h["operation"].startswith("REORG") for h in history)
