"""``run --once`` says what it did in its last line, and fails naming a partition it found
damaged (``--uncleanable-ok``: it does not): a real run on a small log with truncated
segments."""

from __future__ import annotations

from pathlib import Path

import pytest

from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.humanize import size
from tests.e2e.harness import run_cli
from tests.support.config import write_config

pytestmark = pytest.mark.spark


def _segment(directory: Path, base: int, n: int, *, cut: int = 0) -> int:
    """A segment of ``n`` records (7 keys) at ``base``, its last ``cut`` bytes cut off; its
    size."""
    records = [Record(base + i, 1_000 + base + i, b"k%d" % (i % 7), b"v%d" % i) for i in range(n)]
    data = build_batch(records)
    data = data[: len(data) - cut]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{base:020d}.log").write_bytes(data)
    return len(data)


def test_run_once_summarises_and_fails_on_a_partition_it_made_uncleanable(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    root = tmp_path / "in"
    first = _segment(root / "good-0", 0, 20) + _segment(root / "good-0", 20, 10)
    first += _segment(root / "torn-0", 0, 10) + _segment(root / "torn-0", 10, 5, cut=9)
    config = write_config(tmp_path, [root], rolled_only=False)
    (tmp_path / "tmp").mkdir()

    def run(*flags: str) -> tuple[int, list[str], list[str]]:
        r = run_cli(
            "run", "--config", config, "--once", *flags,
            cwd=tmp_path, spark_conf_dir=spark_conf_dir, env={"TMPDIR": str(tmp_path / "tmp")},
        )  # fmt: skip
        return r.returncode, r.stdout.splitlines(), r.stderr.splitlines()

    code, out, err = run("--uncleanable-ok")
    assert code == 0, err
    assert out == [
        f"run --once: 4 segments ({size(first)}) of 2 partitions read: 40 records, 14 keys held; "
        "1 partition materialised; 1 partition uncleanable: torn-0 (new)"
    ]  # torn-0's good segment is merged (its 7 keys), the torn one's batch is not read; the
    # partition is not materialised

    # A second damaged partition, in a run without the flag: exit 1, naming it, not torn-0.
    more = _segment(root / "ripped-0", 0, 5, cut=9)
    code, out, err = run()
    assert code == 1
    assert out == [
        f"run --once: 1 segment ({size(more)}) of 1 partition read: 0 records, 0 keys held; "
        "0 partitions materialised; 2 partitions uncleanable: ripped-0 (new), torn-0"
    ]
    assert len(err) == 1 and err[0].startswith(
        "segcompact: error: uncleanable since this run: ripped-0: "
    )
    assert "torn-0" not in err[0] and err[0].endswith("(--uncleanable-ok: exit 0)")
