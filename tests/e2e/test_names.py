"""Partition directory names through the command line: the longest topic name Kafka allows
works in ``run``, ``materialize``, ``export`` and ``status``; a directory Kafka would not name
so is skipped, never read into another partition, and named in ``status``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from segcompact.config import load_config
from segcompact.format.batch import build_batch
from segcompact.format.logdir import MAX_TOPIC_LENGTH
from segcompact.format.record import Record
from segcompact.storage import LocalInputFile
from tests.e2e.harness import (
    delta_rows,
    model_of,
    model_output,
    output_records,
    publications,
    run_cli,
    write_config,
)
from tests.support.model import read_log_records

pytestmark = pytest.mark.spark

LONG = ("Kafka.allows_249-" * 15)[:MAX_TOPIC_LENGTH]  # the longest topic name, every character
GOOD = "good"


def _segment(directory: Path | bytes, tag: bytes, first: int = 0) -> None:
    """One segment of ten records over three keys, values tagged with where they were written."""
    records = [Record(first + i, 1_000 + i, b"k%d" % (i % 3), tag + b"-%d" % i) for i in range(10)]
    os.makedirs(directory, exist_ok=True)
    name = os.fsencode(directory) + b"/" + b"%020d.log" % first
    with open(name, "wb") as f:
        f.write(build_batch(records))


def test_every_legal_name_works_and_odd_directories_are_skipped_and_named(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    root = tmp_path / "in"
    _segment(root / f"{GOOD}-0", b"good")
    _segment(root / f"{LONG}-0", b"long")
    # Each was once read; good-0 and a newline into good-0's own state, where its later offsets
    # would win.
    for name in (f"{GOOD}-0\n", "lz-0007", f"{GOOD}-00"):
        _segment(root / name, b"odd", first=10)
    _segment(os.fsencode(root) + b"/\xff-0", b"odd", first=10)  # not UTF-8
    config_path = write_config(tmp_path, [root], rolled_only=False, topics={})
    config = load_config(config_path)

    def cli(*args: str) -> str:
        done = run_cli(*args, "--config", config_path, cwd=tmp_path, spark_conf_dir=spark_conf_dir)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return done.stdout

    summary = cli("run", "--once")
    assert summary.rstrip().endswith("2 partitions materialised; 0 partitions uncleanable")

    # Exactly the two partitions, each with its own records only.
    read = [
        r
        for topic in (GOOD, LONG)
        for r in read_log_records(
            LocalInputFile(str(root / f"{topic}-0" / f"{0:020d}.log")), topic, 0
        )
    ]
    model = model_of(config, read, now_ms=0)
    state = delta_rows(config, config.state.table).to_pylist()
    assert {(r["topic"], r["partition"], r["key"]): (r["offset"], r["value"]) for r in state} == {
        k: (s.offset, s.value) for k, s in model.state.items()
    }
    assert output_records(config) == model_output(model)
    assert os.readlink(tmp_path / "out" / f"{LONG}-0").startswith(".versions/")

    cli("materialize", "--topic", LONG, "--force")
    assert publications(config)[(LONG, 0)].version == 2
    assert publications(config)[(GOOD, 0)].version == 1
    assert output_records(config) == model_output(model)

    cli("export", "--to", str(tmp_path / "exported"), "--topic", LONG)
    exported = tmp_path / "exported" / f"{LONG}-0" / f"{0:020d}.log"
    records = read_log_records(LocalInputFile(str(exported)), LONG, 0)
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == model_output(model)[
        (LONG, 0)
    ]

    status = json.loads(cli("status", "--format", "json"))
    assert [(s["topic"], s["partition"]) for s in status["partitions"]] == sorted(
        [(GOOD, 0), (LONG, 0)]
    )
    assert all(s["uncleanable"] is None for s in status["partitions"])
    shown = {
        f"{root}/{GOOD}-0\n": f"b'{root}/{GOOD}-0\\n'",
        f"{root}/lz-0007": f"{root}/lz-0007",
        f"{root}/{GOOD}-00": f"{root}/{GOOD}-00",
        os.fsdecode(os.fsencode(root) + b"/\xff-0"): f"b'{root}/\\xff-0'",
    }
    assert sorted(s["path"] for s in status["skipped"]) == sorted(shown.values())
    assert all(s["reason"].startswith("not a partition directory: ") for s in status["skipped"])

    text = cli("status", "--wide").splitlines()
    assert [line.split()[:2] for line in text[1:3]] == sorted([[GOOD, "0"], [LONG, "0"]])
    assert sorted(line for line in text if line.startswith("skipped: ")) == sorted(
        f"skipped: {s['path']}: {s['reason']}" for s in status["skipped"]
    )
