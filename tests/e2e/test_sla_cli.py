"""The deletion SLA from the command line: run, verify-erasure, purge and sla, on the system
clock (record timestamps are the wall clock's, so nothing is due before ``purge --force``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from tests.e2e.harness import run_cli
from tests.support import config as support_config

SECRET = {SECRET_VARIABLE: "an e2e secret with enough bytes"}


def arrive(root: Path, base: int, key: bytes, value: bytes | None) -> None:
    now = time.time_ns() // 1_000_000
    batch = build_batch([Record(base, now, key, value, (), 0)])
    SampleSegment(base, [batch]).write(root / "users-0")


def test_a_delete_is_proven_erased_after_purge(tmp_path: Path, spark_conf_dir: Path) -> None:
    config = support_config.write_config(
        tmp_path,
        [tmp_path / "in"],
        rolled_only=False,
        state={"deleted_file_retention_ms": 0},
        defaults={"gdpr.deletion.sla.ms": 86_400_000, "delete.retention.ms": 172_800_000},
    )

    def cli(*args: str, env: dict[str, str] = SECRET) -> tuple[int, str, str]:
        done = run_cli(*args, cwd=tmp_path, spark_conf_dir=spark_conf_dir, env=env)
        return done.returncode, done.stdout, done.stderr

    code, _, err = cli("run", "--config", str(config), "--once", env={})
    assert code == 2 and SECRET_VARIABLE in err and len(err.strip().splitlines()) == 1

    arrive(tmp_path / "in", 0, b"alice@example.com", b"MARKER-OLD-ADDRESS")
    assert cli("run", "--config", str(config), "--once")[0] == 0
    arrive(tmp_path / "in", 1, b"alice@example.com", None)
    assert cli("run", "--config", str(config), "--once")[0] == 0

    verify = ("verify-erasure", "--config", str(config), "--topic", "users", "--partition", "0")
    code, out, err = cli(*verify, "--key", "alice@example.com", "--format", "json")
    assert code == 1, err
    proof = json.loads(out)
    assert proof["verdict"] == "pending" and proof["found"], proof
    assert any(f["offset"] == 0 for f in proof["found"])  # the old value, not yet vacuumed
    assert proof["ledger"][0]["status"] == "pending"

    code, out, err = cli("purge", "--config", str(config), "--force")
    assert code == 0, err
    assert "completed" in out

    code, out, err = cli(*verify, "--key-b64", "YWxpY2VAZXhhbXBsZS5jb20=", "--format", "json")
    assert code == 0, (out, err)
    proof = json.loads(out)
    assert proof["verdict"] == "erased" and proof["found"] == []
    assert proof["current"] == {"offset": 1, "tombstone": True}  # until its horizon
    assert proof["ledger"][0]["status"] == "met"
    assert {u["kind"] for u in proof["upstream"]} == {"upstream"}  # the source still has it

    code, out, err = cli("sla", "--config", str(config), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    (deletion,) = report["deletions"]
    assert deletion["status"] == "met" and deletion["offset"] == 1
    assert "alice" not in out  # only the key's HMAC
    assert report["partitions"][0]["met"] >= 1
    assert report["upstream"][0]["location"].endswith("users-0")

    page = tmp_path / "sla.html"
    code, _, err = cli("sla", "--config", str(config), "--format", "html", "--output", str(page))
    assert code == 0, err
    assert "<svg" in page.read_text(encoding="utf-8")
