"""``segcompact health`` follows a job: not running before it starts, running while it runs (its
lease renewed), an uncleanable partition as soon as one is, not running once it stopped; each
check fails the exit code only when ``--fail-on`` names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from segcompact.format.batch import V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record
from tests.e2e.harness import Background, run_cli, wait_for
from tests.support.config import write_config

pytestmark = pytest.mark.spark


def _segment(directory: Path, data: bytes) -> None:
    directory.mkdir(parents=True)
    (directory / f"{0:020d}.log").write_bytes(data)


def test_health_follows_a_job(tmp_path: Path, spark_conf_dir: Path) -> None:
    good = build_batch([Record(i, 1_000, b"k%d" % i, b"v") for i in range(3)])
    flipped = bytearray(good)
    flipped[V2_HEADER_SIZE + 3] ^= 0x40
    _segment(tmp_path / "in" / "good-0", good)
    _segment(tmp_path / "in" / "bad-0", bytes(flipped))
    config = write_config(tmp_path / "job", [tmp_path / "in"], rolled_only=False)

    def health(*args: str) -> tuple[int, dict[str, Any]]:
        result = run_cli("health", "--config", config, "--format", "json", *args, cwd=tmp_path)
        assert result.stderr == "", result.stderr
        return result.returncode, json.loads(result.stdout)

    code, before = health()
    assert code == 1 and before["running"] is None and before["failed"] == ["running"]
    assert before["last_batch"] is None  # no table yet: nothing created by looking
    assert health("--fail-on", "uncleanable,breaches")[0] == 0

    run = ("run", "--config", config, "--log-format", "json")
    with Background(*run, cwd=tmp_path, spark_conf_dir=spark_conf_dir) as job:
        code, running = wait_for(
            "the job's lease and its uncleanable partition",
            lambda: (h := health("--fail-on", "running"))[1]["uncleanable"] and h,
            running=job,
        )
        assert code == 0 and "`segcompact run`" in running["running"]
        assert running["failed"] == ["uncleanable"] and running["last_batch"] is not None
        assert len(running["uncleanable"]) == 1
        assert (
            running["uncleanable"][0].startswith("bad-0: ")
            and "CRC mismatch" in running["uncleanable"][0]
        )
        assert health()[0] == 1  # by default every check counts
        job.terminate()
        assert job.wait() == 0
        # Its own lines only (Spark's went to a file), each a JSON object (--log-format json).
        lines = [json.loads(line) for line in job.stderr().splitlines()]
        assert lines and all(line["logger"].startswith("segcompact") for line in lines)
        assert any(line["message"].startswith("batch 0: ") for line in lines)

    code, after = health("--fail-on", "running")
    assert code == 1 and after["running"] is None and after["failed"] == ["running", "uncleanable"]


def test_an_unknown_check_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "job", [tmp_path / "in"])
    result = run_cli("health", "--config", config, "--fail-on", "running,speed", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "'running,speed': expected checks from running, uncleanable, breaches" in result.stderr
