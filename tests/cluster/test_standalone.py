"""``segcompact`` on a Spark standalone cluster (a master and two single-core workers, each its
own JVM): ``run --once``, a restart on new segments, ``materialize``; ``purge`` with a short
deletion SLA; an executor killed with SIGKILL in the middle of a batch; and every location on
S3 (MinIO), as on a cluster without a shared disk. State and output equal the reference
model's each time.

The job is given the cluster by its config's ``[spark]`` ``spark.master``; the executors get
Delta's and S3A's jars from the driver (``spark.jars``) and run the Python of
``PYSPARK_PYTHON`` (the venv, which the workers share with the driver here).
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from segcompact.clock import CLOCK_VARIABLE
from segcompact.config import CompactorConfig, load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE
from tests.e2e.harness import (
    RETENTION_MS,
    TOPICS,
    Background,
    Checkpoint,
    Log,
    Partition,
    delta_rows,
    model_of,
    model_output,
    model_state,
    native_state,
    output_records,
    publications,
    run_cli,
    wait_for,
    without_times,
    write_log,
)
from tests.support import config as support_config
from tests.support.minio import MinioServer
from tests.support.ports import HOST, free_port
from tests.support.spark import JVM_OPTIONS
from tests.support.spark_cluster import SparkCluster, get_json

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

NOW_MS = 1_800_000_000_000  # every command's clock (SEGCOMPACT_CLOCK_MS)
# Record times 60 to 10 s before NOW_MS; a change is due for erasure at a quarter of its SLA.
BASE_MS = NOW_MS - 60_000
SLA_MS = 600_000
PURGE_MS = NOW_MS + SLA_MS // 2  # past every change's quarter, before any deadline
SECRET = "the cluster tests' ledger secret"


def _log(root: Path, seed: int) -> Log:
    """Two topics of two partitions, several segments each (a restart has some left)."""
    log = write_log(root, seed, records=80, batches_per_segment=2, base_ms=BASE_MS)
    assert min(len(paths) for paths in log.segments.values()) >= 4
    return log


def _config(work: Path, sources: list[str], spark: Mapping[str, str], base: str | None) -> Path:
    return support_config.write_config(
        work,
        sources,
        state={"deleted_file_retention_ms": 0},
        defaults={"delete.retention.ms": RETENTION_MS, "gdpr.deletion.sla.ms": SLA_MS},
        topics={name: settings for name, (_, _, settings) in TOPICS.items() if settings},
        base=base,
        # Executors live for one short command here: the test JVMs' C1-only JIT and collector.
        spark={**spark, "spark.executor.defaultJavaOptions": JVM_OPTIONS},
    )


def _env(now_ms: int = NOW_MS) -> dict[str, str]:
    return {SECRET_VARIABLE: SECRET, CLOCK_VARIABLE: str(now_ms), "AWS_EC2_METADATA_DISABLED": "1"}


def _cli(
    work: Path, spark_conf_dir: Path, *args: str | os.PathLike[str], now_ms: int = NOW_MS
) -> str:
    done = run_cli(*args, cwd=work, spark_conf_dir=spark_conf_dir, env=_env(now_ms))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def _rolled(log: Log, count: int) -> dict[Partition, list[Path]]:
    """What a run reads once the first ``count`` segments of each partition have arrived: all
    but the last, the active one."""
    return {tp: paths[: count - 1] for tp, paths in log.segments.items()}


def _arrive(log: Log, source: Path, count: int) -> None:
    for (topic, partition), paths in log.segments.items():
        (source / f"{topic}-{partition}").mkdir(parents=True, exist_ok=True)
        for path in paths[:count]:
            for f in path.parent.glob(path.stem + ".*"):
                target = source / f"{topic}-{partition}" / f.name
                if not target.exists():
                    target.write_bytes(f.read_bytes())


def _check_model(config: CompactorConfig, log: Log, read: Mapping[Partition, list[Path]]) -> None:
    """State and published output equal the model's for the segments ``read``; each
    partition's counters count every record and segment once."""
    model = model_of(config, log.records(read), now_ms=NOW_MS)
    assert model.state
    assert without_times(native_state(config)) == without_times(model_state(model))
    assert output_records(config) == model_output(model)
    counters = {
        (r["topic"], r["partition"]): (r["segments"], r["records"])
        for r in delta_rows(config, config.state.partitions_table).to_pylist()
    }
    expected = {
        tp: (len(paths), sum(not r.is_control for r in log.records({tp: paths})))
        for tp, paths in read.items()
    }
    assert counters == expected


def _held(config: CompactorConfig, table: str) -> Counter[tuple[str, int, int]]:
    """(topic, partition, offset) of every row in a Parquet file under ``table``'s folder,
    whether or not its snapshot still has the file or a deletion vector marks the row."""
    held: Counter[tuple[str, int, int]] = Counter()
    for path in Path(table).rglob("*.parquet"):
        rows = pq.read_table(path).to_pylist()
        folder = path.parent.name.removeprefix("topic=")  # where topic is the partition column
        held.update((r.get("topic", folder), r["partition"], r["offset"]) for r in rows)
    return held


def _live(config: CompactorConfig, table: str) -> Counter[tuple[str, int, int]]:
    rows = delta_rows(config, table).select(["topic", "partition", "offset"]).to_pylist()
    return Counter((r["topic"], r["partition"], r["offset"]) for r in rows)


def test_run_restart_materialize_and_purge(
    cluster: SparkCluster, tmp_path: Path, spark_conf_dir: Path
) -> None:
    """``run --once``, a restart on new segments, ``materialize --force``, then ``purge`` half
    an SLA after the runs: every overwrite and delete is due, erased and proven so; no file
    under a table that holds records holds a row but the live ones (the state's deletion
    vectors purged, then VACUUM); the state and output are the model's after each step."""
    log = _log(tmp_path / "log", 40)
    source = tmp_path / "in"
    work = tmp_path / "job"
    config_path = _config(work, [str(source)], cluster.spark_settings(), None)
    config = load_config(config_path)
    before = cluster.tasks_run()

    # 1. run --once on the first segments: both executors run its tasks.
    _arrive(log, source, 2)
    _cli(work, spark_conf_dir, "run", "--config", config_path, "--once")
    _check_model(config, log, _rolled(log, 2))
    after = cluster.tasks_run()
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)

    # 2. A restart on new segments adds them, as one run over all would have; its MERGE
    # overwrites keys the first run wrote, with deletion vectors.
    every = max(len(paths) for paths in log.segments.values())
    _arrive(log, source, every)
    _cli(work, spark_conf_dir, "run", "--config", config_path, "--once")
    _check_model(config, log, log.rolled())
    state = config.state.table
    assert any(Path(state).rglob("*.bin")), "the second MERGE should leave deletion vectors"
    assert _held(config, state) != _live(config, state)  # rows overwritten, still in files

    # 3. materialize --force publishes a new version of every partition, the same records.
    versions = {tp: p.version for tp, p in publications(config).items()}
    _cli(work, spark_conf_dir, "materialize", "--config", config_path, "--force")
    assert {tp: p.version for tp, p in publications(config).items()} == {
        tp: v + 1 for tp, v in versions.items()
    }
    _check_model(config, log, log.rolled())

    # 4. purge, half an SLA later.
    purged = _cli(work, spark_conf_dir, "purge", "--config", config_path, now_ms=PURGE_MS)
    assert "completed" in purged
    sla = ("sla", "--config", config_path, "--format", "json")
    report = json.loads(_cli(work, spark_conf_dir, *sla, now_ms=PURGE_MS))
    assert report["deletions"]
    assert {d["status"] for d in report["deletions"]} == {"met"}, report["deletions"]
    s = config.state
    for table in (s.table, s.young_table, s.pending_table):
        assert _held(config, table) == _live(config, table), table
    assert not any(Path(state).rglob("*.bin"))
    assert "REORG" in {c["operation"] for c in DeltaTable(state).history()}  # the purge's commit
    _check_model(config, log, log.rolled())


def test_an_executor_killed_in_a_batch(
    cluster: SparkCluster, tmp_path: Path, spark_conf_dir: Path
) -> None:
    """SIGKILL to an executor running one of the batch's tasks: the task is run again on an
    executor left or started anew, the run ends 0, and nothing is lost or counted twice."""
    log = _log(tmp_path / "log", 41)
    work = tmp_path / "job"
    ui = free_port()
    spark = {**cluster.spark_settings(), "spark.ui.enabled": "true", "spark.ui.port": str(ui)}
    config_path = _config(work, [str(log.root)], spark, None)
    config = load_config(config_path)
    checkpoint = Checkpoint.of(config_path)
    api = f"http://{HOST}:{ui}/api/v1/applications"

    session: dict[str, str] = {}  # the driver's Spark properties, read once it is up

    def busy_executor() -> tuple[str, int] | None:
        """(executor id, pid) of an executor running a task of batch 0, once there is one."""
        if 0 not in checkpoint.offsets():
            return None
        try:
            (app,) = get_json(api)
            if not session:
                session.update(get_json(f"{api}/{app['id']}/environment")["sparkProperties"])
            executors = get_json(f"{api}/{app['id']}/executors")
        except OSError:
            return None
        pids = cluster.executors()
        for e in executors:
            if e["id"] != "driver" and e["activeTasks"] > 0 and (app["id"], e["id"]) in pids:
                return e["id"], pids[(app["id"], e["id"])]
        return None

    args = ("run", "--config", config_path, "--once", "--verbose")
    with Background(*args, cwd=work, spark_conf_dir=spark_conf_dir, env=_env()) as job:
        executor, pid = wait_for("a task of batch 0 on an executor", busy_executor, running=job)
        os.kill(pid, signal.SIGKILL)
        assert job.wait() == 0, job.stderr()[-4000:]
    # Spark's own account, in the driver's log on stderr (--verbose): the executor's tasks lost.
    assert f"Lost executor {executor} on {HOST}" in job.stderr(), job.stderr()[-4000:]
    assert checkpoint.in_flight() == set()
    _check_model(config, log, log.rolled())
    # The master came from [spark], and none of a local session's settings with it: open
    # Parquet writers buffer outside an executor's memory accounting.
    assert session["spark.master"] == cluster.url
    assert "spark.sql.maxConcurrentOutputFileWriters" not in session


def test_every_location_on_s3(
    cluster: SparkCluster, minio: MinioServer, tmp_path: Path, spark_conf_dir: Path
) -> None:
    """No shared disk: segments, tables, checkpoint and output in a bucket; the executors read
    and write them through S3A and s3fs."""
    log = _log(tmp_path / "log", 42)
    bucket = minio.make_bucket(f"cluster-{uuid.uuid4().hex[:8]}")
    client = minio.client()
    for (topic, partition), paths in log.segments.items():
        for path in paths:
            for f in path.parent.glob(path.stem + ".*"):
                client.put_file(str(f), f"{bucket}/segments/{topic}-{partition}/{f.name}")
    base = f"s3a://{bucket}"
    spark = {**minio.spark_settings(), **cluster.spark_settings()}
    work = tmp_path / "job"
    config_path = _config(work, [f"{base}/segments"], spark, base)
    config = load_config(config_path)
    before = cluster.tasks_run()

    _cli(work, spark_conf_dir, "run", "--config", config_path, "--once")
    _check_model(config, log, log.rolled())
    after = cluster.tasks_run()
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)
    assert not any(work.glob("**/_delta_log")), "nothing of the job's on the local disk"
