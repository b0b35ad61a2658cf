"""``verify-erasure`` from the command line: each verdict in text and JSON, an unknown
topic-partition, a file that cannot be read.

One set of real tables is built once, in this process's Spark session on the injectable clock
(an erasure round done for one deletion, another deletion after it); every ``verify-erasure``
runs as a user runs it, in a subprocess that starts no JVM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from segcompact.spark.job import Compactor
from tests.e2e.harness import run_cli
from tests.support import config as support_config

pytestmark = pytest.mark.spark

SECRET = "a verify-erasure test secret"
SLA_MS = 3_600_000
T0 = 1_800_000_000_000
ISO = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b")


def _arrive(work: Path, base: int, records: list[tuple[bytes, bytes | None]], ts: int) -> None:
    batch = build_batch([Record(base + i, ts, k, v, (), 0) for i, (k, v) in enumerate(records)])
    SampleSegment(base, [batch]).write(work / "in" / "users-0")


@pytest.fixture(scope="module")
def work(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """users-0 after: user-5 deleted and its erasure round done; user-3 overwritten before that
    round; then user-1 deleted and user-2 overwritten, with no round since."""
    work = tmp_path_factory.mktemp("verify")
    config: CompactorConfig = load_config(
        support_config.write_config(
            work,
            [work / "in"],
            rolled_only=False,
            state={"deleted_file_retention_ms": 0},
            defaults={"delete.retention.ms": 2 * SLA_MS, "gdpr.deletion.sla.ms": SLA_MS},
        )
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SECRET_VARIABLE, SECRET)
        clock = ManualClock(T0)
        compactor = Compactor(spark, config, clock)
        first = [(b"user-1", b"ALPHA"), (b"user-2", b"TWO"), (b"user-3", b"OLD"), (b"user-5", b"V")]
        _arrive(work, 0, first, T0)
        compactor.run_once()
        clock.advance(60_000)
        _arrive(work, 4, [(b"user-5", None), (b"user-3", b"NEW")], clock.now_ms())
        compactor.run_once()
        clock.advance(SLA_MS // 2)
        report = compactor.upkeep()
        assert report.completed, report.waiting
        clock.advance(60_000)
        _arrive(work, 6, [(b"user-1", None), (b"user-2", b"TWO AGAIN")], clock.now_ms())
        compactor.run_once()
    yield work


def _verify(work: Path, topic: str, partition: int, key: str, form: str) -> tuple[int, str, str]:
    done = run_cli(
        "verify-erasure",
        "--config",
        work / "compactor.toml",
        "--topic",
        topic,
        "--partition",
        str(partition),
        "--key",
        key,
        "--format",
        form,
        cwd=work,
        env={SECRET_VARIABLE: SECRET},
    )
    return done.returncode, done.stdout, done.stderr


# key: (verdict, exit code, the current row, what the found list holds by offset)
KEYS = {
    "user-5": ("erased", 0, {"offset": 4, "tombstone": True}, set()),
    "user-1": ("pending", 1, {"offset": 6, "tombstone": True}, {0}),
    "user-3": ("live", 0, {"offset": 5, "tombstone": False}, set()),
    "user-2": ("live", 1, {"offset": 7, "tombstone": False}, {1}),
    "nobody": ("never seen", 1, None, set()),
}


@pytest.mark.parametrize("key", sorted(KEYS))
def test_each_verdict_in_json_and_text(work: Path, key: str) -> None:
    verdict, code, current, offsets = KEYS[key]
    got, out, err = _verify(work, "users", 0, key, "json")
    assert (got, err) == (code, ""), (out, err)
    proof = json.loads(out)
    assert (proof["verdict"], proof["proven"], proof["current"]) == (verdict, code == 0, current)
    assert {f["offset"] for f in proof["found"]} == offsets, proof["found"]
    assert {f["kind"] for f in proof["upstream"]} <= {"upstream"}
    assert key.encode().hex() not in out and f'"{key}"' not in out  # the key's hash only
    got, out, err = _verify(work, "users", 0, key, "text")
    assert (got, err) == (code, ""), (out, err)
    lines = out.splitlines()
    assert lines[0] == f"users-0 key {proof['key_hash'][:16]}…: {verdict}"
    assert " ".join(line.strip() for line in lines).count(proof["why"]) == 1
    for f in proof["found"]:
        assert f"  still held ({f['kind']}): {f['location']}: {f['detail']}" in lines
    ledger = [line for line in lines if line.startswith("  ledger: ")]
    assert len(ledger) == len(proof["ledger"])
    if verdict in ("erased", "pending"):
        (row,) = proof["ledger"]
        assert ISO.fullmatch(row["appended_at"]) and ISO.fullmatch(row["deadline"])
        assert f"deleted {row['appended_at']}, deadline {row['deadline']}" in ledger[0]
        assert ("completed_at" in row) == (verdict == "erased")
        assert (f"completed {row['completed_at']}" if verdict == "erased" else "not completed") in (
            ledger[0]
        )


@pytest.mark.parametrize(("topic", "partition"), [("sesions", 0), ("users", 7)])
def test_an_unknown_topic_partition_is_a_usage_error(
    work: Path, topic: str, partition: int
) -> None:
    code, out, err = _verify(work, topic, partition, "user-1", "text")
    assert (code, out) == (2, ""), (code, out, err)
    (line,) = err.splitlines()
    assert line.startswith(f"segcompact: error: {topic}-{partition}: no such topic-partition"), line


def test_a_file_that_cannot_be_read_makes_the_verdict_unknown(work: Path) -> None:
    junk = Path(load_config(work / "compactor.toml").state.table) / "part-99999-junk.parquet"
    junk.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")  # not Delta's: the snapshot ignores it
    try:
        for form in ("json", "text"):
            code, out, err = _verify(work, "users", 0, "user-5", form)
            assert (code, err) == (1, ""), (out, err)
            if form == "json":
                proof = json.loads(out)
                assert proof["verdict"] == "unknown" and not proof["proven"]
                assert [f["location"] for f in proof["found"]] == [str(junk)]
            else:
                assert out.splitlines()[0].endswith(": unknown")
                assert f"  not read: {junk}: " in out
    finally:
        junk.unlink()
