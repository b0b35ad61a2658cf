"""Resource faults: the output's disk filling up while a version is written (a small tmpfs, so
the disk really is full), then freed."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import OutputConfig, load_config
from segcompact.errors import SegcompactError
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.publication import Output
from segcompact.spark.job import Compactor
from tests.e2e.harness import output_records
from tests.support.config import write_config

pytestmark = pytest.mark.spark

NOW_MS = 1_800_000_000_000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, mounted for the test (root, as this machine's tests run)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _segment(root: Path, base: int, n: int, tag: bytes) -> None:
    records = [Record(base + i, 1_000 + i, b"k%d" % i, tag * 2_000) for i in range(n)]
    directory = root / "t-0"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{base:020d}.log").write_bytes(build_batch(records))


def test_a_full_disk_leaves_the_published_version_and_a_retry_succeeds(
    spark: SparkSession, tmp_path: Path, small_disk: Path
) -> None:
    root = tmp_path / "in"
    _segment(root, 0, 100, b"a")  # 100 keys, 200 KB of values: version 1 fits
    config = load_config(write_config(tmp_path / "job", [root], rolled_only=False))
    config = dataclasses.replace(config, output=OutputConfig(path=str(small_disk / "out")))
    clock = ManualClock(NOW_MS)
    Compactor(spark, config, clock).run_once()
    first = output_records(config)
    assert first and Output(config.output.path, config.storage).latest("t", 0).version == 1

    # Version 2 (200 KB more) does not fit in what a filler leaves.
    _segment(root, 100, 100, b"b")
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (2 * 1024 * 1024 - 300 * 1024))
    compactor = Compactor(spark, config, clock)
    with pytest.raises(SegcompactError) as info:
        compactor.run_once()
    message = "streaming query failed: OSError: [Errno 28] No space left on device"
    assert str(info.value) == message  # one line, the cause
    assert output_records(config) == first  # version 1 still the published one, readable
    assert Output(config.output.path, config.storage).latest("t", 0).version == 1

    filler.unlink()
    Compactor(spark, config, clock).run_once()  # the retry: the state was committed before
    output = Output(config.output.path, config.storage)
    assert output.latest("t", 0).version == 2
    # The same 100 keys, each now at its second segment's value.
    assert [(offset, value[:1]) for offset, _k, value, _h in output_records(config)[("t", 0)]] == [
        (100 + i, b"b") for i in range(100)
    ]
