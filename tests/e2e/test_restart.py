"""Stopping the continuous job: a real kill in the middle of a batch, then a restart; and a
clean stop on SIGTERM, to segcompact alone or to every process of the job. Progress is read
from disk while the job runs: the query's ``offsets/N`` (batch N planned) and ``commits/N``
(batch N done) and the idempotent-write versions in the Delta logs, which say how far into
batch N its writes got."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.spark.job import Compactor
from tests.e2e.harness import (
    RETENTION_MS,
    Background,
    Checkpoint,
    Log,
    check_horizons,
    delta_txn_versions,
    group_members,
    model_of,
    model_output,
    model_pending,
    model_state,
    output_records,
    partitions_table,
    pending_records,
    run_cli,
    state_table,
    wait_for,
    wait_for_none,
    without_times,
    write_config,
    write_log,
)

pytestmark = pytest.mark.spark

# One segment per micro-batch, so that a run has several batches to be caught in.
STREAM = {
    "trigger_interval": "1 second",
    "max_segments_per_batch": 1,
    # Upkeep between batches runs on the main thread while a batch runs on another; what that
    # overlap does is not what these tests are about, so it does not come round during them.
    "materialize_check_interval_ms": 3_600_000,
}
NOW_MS = 1_800_000_000_000  # the in-process runs' clock: later than every record
# Partition counters that must not depend on how the input was split into batches, nor on a
# batch being replayed after a crash.
COUNTERS = (
    "log_start_offset",
    "log_end_offset",
    "segments",
    "records",
    "keyless_records",
    "bad_version_headers",
    "uncleanable_reason",
)


def _small_log(root: Path, seed: int, topics: list[str], records: int = 40) -> Log:
    """Segments of two batches each: a few segments per partition, each a micro-batch; the
    seeds are chosen so that each partition's first segment leaves a row in state."""
    log = write_log(root, seed, topics=topics, partitions=1, records=records, batches_per_segment=2)
    config = load_config(write_config(root.parent / "premise", [log.root]))
    for tp, paths in log.rolled().items():
        assert model_of(config, log.records({tp: paths[:1]}), now_ms=0).state, tp
    return log


def _state_writes(config: CompactorConfig) -> set[int]:
    """The batches that wrote the state: by its MERGE, or by appending a partition it holds no
    row of yet."""
    table = config.state.table
    return delta_txn_versions(table, "segcompact-state") | delta_txn_versions(
        table, "segcompact-state-new"
    )


def _counters(spark: SparkSession, config: CompactorConfig) -> dict[Any, tuple[Any, ...]]:
    return {
        tp: tuple(row[c] for c in COUNTERS) for tp, row in partitions_table(spark, config).items()
    }


def test_kill_in_the_middle_of_a_batch_then_once_finishes_the_job(
    spark: SparkSession, tmp_path: Path, spark_conf_dir: Path
) -> None:
    # Two rolled segments a partition: four micro-batches, three after the first to be
    # caught in (fewer segments, fewer batches for both runs to go through).
    log = _small_log(tmp_path / "in", 2, ["orders", "users"], records=30)
    batches = sum(len(paths) for paths in log.rolled().values())
    assert batches >= 4
    work = tmp_path / "killed"
    config_path = write_config(work, [log.root], stream=STREAM)
    config = load_config(config_path)
    chk = Checkpoint.of(config_path)

    def half_written() -> int | None:
        """A batch after the first whose state MERGE is committed and partitions MERGE not."""
        state = _state_writes(config)
        parts = delta_txn_versions(config.state.partitions_table, "segcompact-partitions")
        return next((n for n in chk.in_flight() if n >= 1 and n in state - parts), None)

    with Background("run", "--config", config_path, cwd=work, spark_conf_dir=spark_conf_dir) as job:
        batch = wait_for("a half-written batch", half_written, running=job)
        job.kill_group()
    assert batch in chk.in_flight(), "the kill should leave the batch planned, not committed"
    assert chk.commits() == set(range(batch))

    result = run_cli(
        "run", "--config", config_path, "--once", cwd=work, spark_conf_dir=spark_conf_dir
    )
    assert result.returncode == 0, result.stderr
    assert chk.in_flight() == set()
    assert chk.commits() == set(range(batches))
    # Every batch wrote the state once: the replayed batch skipped the MERGE it had committed.
    assert _state_writes(config) == set(range(batches))

    # The same log in a fresh directory, uninterrupted, in one micro-batch.
    fresh = load_config(write_config(tmp_path / "fresh", [log.root]))
    Compactor(spark, fresh, ManualClock(NOW_MS)).run_once()
    model = model_of(config, log.records(log.rolled()), now_ms=NOW_MS)

    rows = state_table(spark, config)
    assert without_times(rows) == without_times(state_table(spark, fresh))
    assert without_times(rows) == without_times(model_state(model))
    check_horizons(rows, RETENTION_MS)
    # Counters are sums over batches: a batch counted twice shows here.
    assert _counters(spark, config) == _counters(spark, fresh)
    assert pending_records(spark, config) == pending_records(spark, fresh)
    assert pending_records(spark, config) == model_pending(model)
    # The published output too, whatever versions the kill left behind.
    assert output_records(config) == output_records(fresh) == model_output(model)


def test_sigterm_finishes_the_batch_in_flight_and_exits_0(
    spark: SparkSession, tmp_path: Path, spark_conf_dir: Path
) -> None:
    log = _small_log(tmp_path / "in", 9, ["orders"])
    last = sum(len(paths) for paths in log.rolled().values()) - 1
    assert last >= 2
    work = tmp_path / "stopped"
    config_path = write_config(work, [log.root], stream=STREAM)
    config = load_config(config_path)
    chk = Checkpoint.of(config_path)

    with Background("run", "--config", config_path, cwd=work, spark_conf_dir=spark_conf_dir) as job:
        wait_for("the last batch", lambda: last in chk.in_flight(), running=job)
        job.terminate()
        assert job.wait() == 0, job.stderr()
    assert "Traceback" not in job.stderr()
    assert chk.in_flight() == set()
    assert chk.commits() == set(range(last + 1))

    model = model_of(config, log.records(log.rolled()), now_ms=0)
    rows = state_table(spark, config)
    assert without_times(rows) == without_times(model_state(model))
    check_horizons(rows, RETENTION_MS)

    # A following --once run finds nothing to do: not a row, counter or version changes.
    parts = partitions_table(spark, config)
    versions = {t: _delta_versions(t) for t in (config.state.table, config.state.partitions_table)}
    Compactor(spark, config).run_once()
    assert state_table(spark, config) == rows
    assert partitions_table(spark, config) == parts
    assert {t: _delta_versions(t) for t in versions} == versions
    assert chk.commits() == set(range(last + 1))


def test_sigterm_to_every_process_stops_after_the_batch_in_flight(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    """As systemd stops a unit (``KillMode=control-group``): SIGTERM to segcompact, the JVM,
    Spark's Python daemon and its workers at once, with a backlog to read."""
    log = _small_log(tmp_path / "in", 12, ["orders"])
    batches = sum(len(paths) for paths in log.rolled().values())
    assert batches >= 4
    work = tmp_path / "backlog"
    config_path = write_config(work, [log.root], stream=STREAM)
    chk = Checkpoint.of(config_path)

    with Background("run", "--config", config_path, cwd=work, spark_conf_dir=spark_conf_dir) as job:
        wait_for("the first batch", lambda: 0 in chk.in_flight(), running=job)
        group = group_members(job.proc.pid)
        assert len(group) >= 2, "segcompact and its JVM"
        assert job.processes() - group, "Spark's Python daemon, in a group of its own"
        job.terminate_all()
        assert job.wait() == 0, job.stderr()
        for trace in ("Traceback", "ERROR", "Py4JNetworkError", "EOFError"):
            assert trace not in job.stderr(), job.stderr()
        # segcompact waited for its JVM; the daemon ends when the JVM stops it.
        assert group_members(job.proc.pid) == set()
        wait_for_none("the run's processes to end", job.processes)
    # The batch in flight finished (and at most one that began before the stop took effect);
    # the next one may have been planned (offsets written) but was refused before it wrote
    # anything, so a restart reads it again.
    done = chk.commits()
    assert done in ({0}, {0, 1}), f"{batches} batches available"
    assert chk.in_flight() <= {max(done) + 1}


def test_the_jvm_and_python_workers_end_with_a_killed_driver(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    """They ignore SIGTERM, so they must end with segcompact however it ends: SIGKILL (or a
    second SIGTERM, which ends it as SIGKILL does) to segcompact alone."""
    log = _small_log(tmp_path / "in", 12, ["orders"])
    work = tmp_path / "killed"
    config_path = write_config(work, [log.root], stream=STREAM)
    chk = Checkpoint.of(config_path)

    with Background("run", "--config", config_path, cwd=work, spark_conf_dir=spark_conf_dir) as job:
        wait_for("the first batch", lambda: 0 in chk.in_flight(), running=job)
        assert len(job.processes()) >= 3, "segcompact, its JVM, Spark's Python daemon"
        job.proc.kill()
        assert job.wait() == -signal.SIGKILL
        wait_for_none("the run's processes to end", job.processes)


def _delta_versions(table: str) -> list[str]:
    return sorted(p.name for p in (Path(table) / "_delta_log").glob("*.json"))
