"""``segcompact`` with every location on a real S3 server (MinIO): source segments, tables,
checkpoint and output. ``run --once``, a restart that resumes (and meets damaged objects),
``materialize``, ``export``, ``delete-records``, a kill -9 in the middle of a publication, and
the state table read back by delta-rs from S3."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from segcompact.config import CompactorConfig, load_config
from segcompact.format.batch import V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record
from segcompact.publication import Output
from segcompact.storage import LocalInputFile
from tests.e2e.harness import (
    RUN_TIMEOUT_S,
    TOPICS,
    Log,
    Partition,
    StateKey,
    cli_env,
    delta_rows,
    model_of,
    model_output,
    model_state,
    output_records,
    publications,
    run_cli,
    write_log,
)
from tests.support.minio import MinioServer
from tests.support.model import read_log_records

pytestmark = pytest.mark.spark

NOW_MS = 1_800_000_000_000  # the model's clock; compared fields do not depend on it


def _toml(value: Any) -> str:
    return json.dumps(value)


def _write_config(work: Path, bucket: str, minio: MinioServer) -> Path:
    base = f"s3a://{bucket}"
    lines = [
        "[source]",
        f"paths = [{_toml(base + '/segments')}]",
        "[state]",
        f"table = {_toml(base + '/state')}",
        "[output]",
        f"path = {_toml(base + '/out')}",
        "[stream]",
        f"checkpoint = {_toml(base + '/checkpoint')}",
        "[spark]",
        *(f"{_toml(k)} = {_toml(v)}" for k, v in minio.spark_settings().items()),
        "[defaults]",
        '"delete.retention.ms" = 3600000',
    ]
    for name, (_, _, settings) in TOPICS.items():
        if settings:
            lines.append(f"[topics.{_toml(name)}]")
            lines += [f"{_toml(k)} = {_toml(v)}" for k, v in settings.items()]
    path = work / "compactor.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _upload(minio: MinioServer, bucket: str, log: Log, count: int) -> None:
    """The first ``count`` segment files of every partition (with their indexes), to S3."""
    client = minio.client()
    for (topic, partition), paths in log.segments.items():
        for path in paths[:count]:
            for f in path.parent.glob(path.stem + ".*"):
                client.put_file(str(f), f"{bucket}/segments/{topic}-{partition}/{f.name}")


def _state(config: CompactorConfig) -> dict[StateKey, dict[str, Any]]:
    """The state table read by delta-rs straight from S3."""
    rows = delta_rows(config, config.state.table).to_pylist()
    out: dict[StateKey, dict[str, Any]] = {}
    for r in rows:
        out[(r["topic"], r["partition"], r["key"])] = {
            "offset": r["offset"],
            "value": r["value"],
            "headers": tuple((h["key"], h["value"]) for h in r["headers"]),
            "order_value": r["order_value"],
            "tombstone": r["tombstone"],
        }
    return out


def _output(config: CompactorConfig) -> tuple[dict[Partition, list[Any]], dict[Partition, int]]:
    """Each partition's published records, and its version."""
    versions = {tp: p.version for tp, p in publications(config).items()}
    return output_records(config), versions


def _compared(state: dict[StateKey, dict[str, Any]]) -> dict[StateKey, tuple[Any, ...]]:
    fields = ("offset", "value", "headers", "order_value", "tombstone")
    return {k: tuple(v[f] for f in fields) for k, v in state.items()}


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def test_every_location_on_s3(minio: MinioServer, tmp_path: Path, spark_conf_dir: Path) -> None:
    bucket = minio.make_bucket(f"e2e-{uuid.uuid4().hex[:8]}")
    log = write_log(tmp_path / "logs", 20261123, partitions=1, records=60)
    config_path = _write_config(tmp_path, bucket, minio)
    config = load_config(config_path)
    env = {"AWS_EC2_METADATA_DISABLED": "true"}

    def cli(*args: str | os.PathLike[str]) -> str:
        return _ok(run_cli(*args, cwd=tmp_path, spark_conf_dir=spark_conf_dir, env=env))

    def model_for(count: int) -> Any:
        # With count segments uploaded, the last of each partition is the active one.
        rolled = {tp: paths[: count - 1] for tp, paths in log.segments.items()}
        return model_of(config, log.records(rolled), now_ms=NOW_MS)

    # 1. run --once on the first segments.
    _upload(minio, bucket, log, 2)
    cli("run", "--config", config_path, "--once")
    first = model_for(2)
    assert first.state
    assert _compared(_state(config)) == _compared(model_state(first))
    records, versions = _output(config)
    assert records == model_output(first)
    assert set(versions.values()) == {1}

    # 2. A restart resumes where the checkpoint is: the rest of the log is added, not re-read.
    #    Damaged objects uploaded with it stay in their partitions: each is marked uncleanable,
    #    its good segment is compacted, and every other partition is the model's.
    every = max(len(p) for p in log.segments.values())
    _upload(minio, bucket, log, every)
    reasons = _upload_damaged(minio, bucket)
    second = run_cli(
        "run", "--config", config_path, "--once", cwd=tmp_path, spark_conf_dir=spark_conf_dir,
        env=env,
    )  # fmt: skip
    # Exit 1, naming each partition this run found uncleanable (--uncleanable-ok: 0).
    assert second.returncode == 1 and "Traceback" not in second.stderr, second.stderr
    assert second.stderr.startswith("segcompact: error: uncleanable since this run: ")
    assert all(f"{topic}-0: s3a://" in second.stderr for topic in reasons)
    last = model_for(every)
    state = _compared(_state(config))
    assert {k: v for k, v in state.items() if k[0] not in reasons} == _compared(model_state(last))
    rows = {
        r["topic"]: r
        for r in json.loads(cli("status", "--config", config_path, "--format", "json"))[
            "partitions"
        ]
    }
    for damaged, reason in reasons.items():
        segment = f"s3a://{bucket}/segments/{damaged}-0/{10:020d}.log"
        assert reason in rows[damaged]["uncleanable"] and segment in rows[damaged]["uncleanable"]
        assert {k[2] for k in state if k[0] == damaged} == {b"k%d" % i for i in range(3)}
    records, versions = _output(config)
    assert _undamaged(records, reasons) == model_output(last)

    # 3. A kill -9 after a version's files are written, before its manifest: the previous
    #    version stays the published one and readable; the next materialize --force publishes
    #    a new version of every partition, the same records, and cleans up.
    _killed_in_publication(config_path, tmp_path, spark_conf_dir, env)
    assert _output(config) == (records, versions)
    output = Output(config.output.path, config.storage)
    tp = sorted(model_output(last))[0]
    leftovers = output.fs.list_dir(output.join(".versions", f"{tp[0]}-{tp[1]}"))
    assert len(leftovers) == 2, "the killed attempt's files stay until the next publish"
    cli("materialize", "--config", config_path, "--force")
    records, after_kill = _output(config)
    assert after_kill == {tp: v + 1 for tp, v in versions.items()}
    assert _undamaged(records, reasons) == model_output(last)
    assert len(output.fs.list_dir(output.join(".versions", f"{tp[0]}-{tp[1]}"))) == 1

    # 4. export copies the published versions into a Kafka log dir.
    exported = tmp_path / "exported"
    cli("export", "--config", config_path, "--to", exported)
    for (topic, partition), expected in records.items():
        logs = sorted((exported / f"{topic}-{partition}").glob("*.log"))
        assert logs and (exported / f"{topic}-{partition}" / logs[0].name).with_suffix(".index")
        got = [
            (r.offset, r.key, r.value, r.headers)
            for path in logs
            for r in read_log_records(LocalInputFile(path), topic, partition)
        ]
        assert got == expected

    # 5. delete-records (KIP-107) moves a log start offset, on S3 as anywhere.
    topic, partition = tp
    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": topic, "partition": partition, "offset": 5}]}
        )
    )
    out = cli("delete-records", "--config", config_path, "--offset-json-file", offsets)
    assert f"partition: {topic}-{partition}\tlow_watermark: 5" in out

    # The partitions table was created and its few rows merged by delta-rs on S3 (a conditional
    # write per commit); the state, with deletion vectors, was created by Spark.
    engines = _engines(minio, config.state.partitions_table)
    assert engines[0] == engines[1] == "delta-rs", engines
    assert _engines(minio, config.state.table)[0] == "Apache-Spark"


def _engines(minio: MinioServer, table: str) -> dict[int, str]:
    """Each commit's engine, by version, from the table's log on the server."""
    client = minio.client()
    log = table.split("://", 1)[1].rstrip("/") + "/_delta_log"
    engines = {}
    for path in client.glob(f"{log}/*.json"):
        for line in client.cat(path).decode().splitlines():
            info = json.loads(line).get("commitInfo")
            if info is not None:
                name = path.rsplit("/", 1)[1]
                engines[int(name.split(".")[0])] = info["engineInfo"].split("/")[0].split(":")[0]
    return engines


def _undamaged(
    records: dict[Partition, list[Any]], damaged: dict[str, str]
) -> dict[Partition, list[Any]]:
    return {tp: r for tp, r in records.items() if tp[0] not in damaged}


def _upload_damaged(minio: MinioServer, bucket: str) -> dict[str, str]:
    """Partitions of three segments each (a good one, a damaged one, the active one); returns
    each one's expected reason."""

    def batch(first: int) -> bytes:
        return build_batch([Record(first + i, 1_000, b"k%d" % i, b"v") for i in range(3)])

    flipped = bytearray(batch(10))
    flipped[V2_HEADER_SIZE + 3] ^= 0x40
    damage = {"flipped": bytes(flipped), "truncated": batch(10)[:-9]}
    client = minio.client()
    for topic, data in damage.items():
        for base, content in ((0, batch(0)), (10, data), (20, batch(20))):
            client.pipe(f"{bucket}/segments/{topic}-0/{base:020d}.log", content)
    return {"flipped": "CRC mismatch", "truncated": "runs past the end of the file"}


def _killed_in_publication(
    config_path: Path, cwd: Path, spark_conf_dir: Path, env: dict[str, str]
) -> None:
    """``materialize --force`` killed with SIGKILL as it is about to publish."""
    script = (
        "import os, signal, sys\n"
        "from segcompact.publication import Output\n"
        "Output.publish = lambda self, publication: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from segcompact.cli import main\n"
        f"sys.exit(main(['materialize', '--config', {str(config_path)!r}, '--force']))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=cwd,
        env={**cli_env(spark_conf_dir), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
        assert proc.returncode == -signal.SIGKILL, err
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the JVM and workers it left
