"""The deletion SLA sees what segcompact has not read: a poison batch stops one partition of an
SLA topic, a tombstone arrives in another after the run; on a pinned clock both are unverified
past a quarter of the SLA and breaches past it, in ``sla``, ``health`` and ``/metrics``, and
``verify-erasure`` answers unknown (exit 1) from the start for the keys the unmerged data may
hold, and still proves one it does not."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from segcompact.clock import CLOCK_VARIABLE
from segcompact.config import load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.format.batch import V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record
from segcompact.metrics import JobMetrics
from tests.e2e.harness import run_cli
from tests.support.config import write_config
from tests.unit.test_metrics_known import scrape

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
HOUR = 3_600_000
SLA = 24 * HOUR
SECRET = {SECRET_VARIABLE: "an unread-data test's secret, long enough"}


def _segment(root: Path, tp: str, base: int, data: bytes) -> None:
    path = root / tp / f"{base:020d}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = (T0 + 10_000) * 1_000_000  # written after its records: their times count
    os.utime(path, ns=(stamp, stamp))


def test_unread_data_counts_against_the_sla(tmp_path: Path, spark_conf_dir: Path) -> None:
    root = tmp_path / "in"
    alice_and_dave = [Record(0, T0, b"alice", b"OLD-ADDRESS"), Record(1, T0, b"dave", b"D")]
    _segment(root, "users-0", 0, build_batch(alice_and_dave))
    _segment(root, "users-1", 0, build_batch([Record(0, T0, b"bob", b"B")]))
    poison = bytearray(build_batch([Record(3, T0 + 1_000, b"bob", None)]))
    poison[V2_HEADER_SIZE + 3] ^= 0x40  # the CRC fails; the header's time still reads
    _segment(root, "users-1", 3, bytes(poison))
    path = write_config(
        tmp_path / "job",
        [root],
        rolled_only=False,
        defaults={"gdpr.deletion.sla.ms": SLA, "delete.retention.ms": 2 * SLA},
    )

    def cli(*args: str, at: int) -> tuple[int, str]:
        env = {**SECRET, CLOCK_VARIABLE: str(at)}
        done = run_cli(
            *args, "--config", path, cwd=tmp_path, spark_conf_dir=spark_conf_dir, env=env
        )
        return done.returncode, done.stdout + done.stderr

    code, out = cli("run", "--once", "--uncleanable-ok", at=T0 + 5_000)
    assert code == 0, out

    def verify(partition: int, key: str, at: int) -> tuple[int, dict[str, Any]]:
        args = ("--topic", "users", "--partition", str(partition), "--key", key)
        code, out = cli("verify-erasure", *args, "--format", "json", at=at)
        return code, json.loads(out)

    code, proof = verify(0, "alice", T0 + 5_000)
    assert (code, proof["verdict"]) == (0, "live"), proof  # everything of users-0 merged
    # The tombstone arrives after the run: not merged, and the ledger does not know it.
    _segment(root, "users-0", 2, build_batch([Record(2, T0 + 2_000, b"alice", None)]))

    def sla(at: int) -> dict[str, Any]:
        code, out = cli("sla", "--format", "json", at=at)
        assert code == 0, out
        report: dict[str, Any] = json.loads(out)
        return report

    def health(at: int) -> dict[str, Any]:
        code, out = cli("health", "--format", "json", at=at)
        assert code == 1, out
        shown: dict[str, Any] = json.loads(out)
        return shown

    # Younger than a quarter of the SLA: the usual wait, yet no proof of erasure.
    early = T0 + HOUR
    assert sla(early)["unread"] == []
    assert "unverified" not in health(early)["failed"]
    for partition, key in ((0, "alice"), (1, "bob")):
        code, proof = verify(partition, key, early)
        assert (code, proof["verdict"]) == (1, "unknown"), proof
        unmerged = [f for f in proof["found"] if f["kind"] == "unmerged"]
        assert unmerged and "not merged" in proof["why"], proof
    assert "past the damage" in verify(1, "bob", early)[1]["found"][0]["detail"]
    # The unmerged segment, read to its end, holds no record of dave: his proof stands.
    code, proof = verify(0, "dave", early)
    assert (code, proof["verdict"]) == (0, "live"), proof

    # Past a quarter: unverified.
    quarter = T0 + 7 * HOUR
    report = sla(quarter)
    assert [(u["partition"], u["status"]) for u in report["unread"]] == [
        (0, "unverified"),
        (1, "unverified"),
    ]
    assert report["unread"][0]["location"].endswith("users-0/00000000000000000002.log")
    shown = health(quarter)
    assert "unverified" in shown["failed"] and shown["breaches"] == 0
    assert [u.split(":")[0] for u in shown["unverified"]] == ["users-0", "users-1"]

    # Past the SLA: breaches, though the ledger has recorded no deletion.
    late = T0 + 25 * HOUR
    report = sla(late)
    assert {u["status"] for u in report["unread"]} == {"breached"}
    assert report["unread"][1]["deadline"] == "2023-11-15T22:13:21.000Z"  # T0 + 1 s + SLA
    code, out = cli("sla", at=late)
    assert "users-0: unread data past its deadline" in out, out
    shown = health(late)
    assert shown["breaches"] == 2 and "breaches" in shown["failed"]
    assert verify(0, "alice", late)[1]["verdict"] == "unknown"

    metrics = JobMetrics()

    def no_spark(views: object) -> Any:
        raise AssertionError("delta-rs reads these tables")

    metrics.refresh(load_config(path), late, no_spark, force=True)
    scraped = scrape(metrics)
    users = (("topic", "users"),)
    assert scraped[("segcompact_unverified_partitions", users)] == 2
    assert scraped[("segcompact_oldest_unread_age_secs", users)] == (25 * HOUR - 1_000) / 1000
