"""``segcompact ship`` ships a 1 GiB segment in under 100 MiB of memory (the peak RSS of its
process), to S3 (MinIO) and to a local dir: the file is streamed, one batch read and, to S3,
one part buffered at a time, and nothing it imports is a columnar library
(``tests/unit/test_ship_imports.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import segcompact
from segcompact.format.batch import build_batch
from segcompact.format.crc import crc32c
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter
from segcompact.ship.manifest import PartitionManifest
from segcompact.storage import LocalOutputDirectory, Storage
from tests.support.minio import MinioServer
from tests.support.ship import manifest_entries

SEGMENT_MIB = 1024  # of 1 MiB batches: Kafka's default segment.bytes
LIMIT_MIB = 100
_BATCH = 1 << 20
_TIMEOUT_S = 600  # a bound on a shipper that never gets there, not a pass condition

# The command, then its peak RSS on stderr: VmHWM of its own image (a fork's rusage would
# count the test process it was forked from, before exec).
_MEASURED = (
    "import re, sys\n"
    "from segcompact.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "status = open('/proc/self/status').read()\n"
    "print('VmHWM', re.search(r'VmHWM:\\s+(\\d+) kB', status)[1], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@dataclass(frozen=True)
class BigLog:
    log_dir: Path
    size: int  # of the rolled segment
    crc: int  # its CRC-32C


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BigLog]:
    """A log dir with a rolled segment of ``SEGMENT_MIB`` MiB, written a batch at a time by
    segcompact's encoder (never whole in memory), and an active one."""
    root = tmp_path_factory.mktemp("ship-memory")
    partition = root / "kafka" / "orders-0"
    payload = os.urandom(_BATCH - 200)  # incompressible, as most values on the wire are
    crc = 0
    with SegmentWriter(LocalOutputDirectory(partition), 0) as rolled:
        for i in range(SEGMENT_MIB):
            batch = build_batch([Record(i, 1_000 + i, b"k%d" % (i % 7), payload)])
            rolled.append(batch)
            crc = crc32c(batch, crc)
    with SegmentWriter(LocalOutputDirectory(partition), SEGMENT_MIB) as active:
        active.append(build_batch([Record(SEGMENT_MIB, 1_000, b"k", b"v")]))
    yield BigLog(root / "kafka", rolled.size, crc)
    shutil.rmtree(root, ignore_errors=True)


def _ship_measured(config: Path, cwd: Path) -> tuple[float, str]:
    """One ``ship --once`` run, which must succeed: its peak RSS in MiB, and its summary."""
    env = {**os.environ, "PYTHONPATH": str(Path(segcompact.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "ship", "--config", str(config), "--once"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stderr.rsplit("VmHWM ", 1)[1]) / 1024, done.stdout


def _check_shipped(big_log: BigLog, summary: str, storage: Storage, partition_dir: str) -> None:
    assert summary.startswith(f"shipped 1 segments ({big_log.size} bytes)"), summary
    fs, path = storage.resolve(partition_dir)
    (entry,) = manifest_entries(PartitionManifest(fs, path))
    assert (entry.kind, entry.size, entry.crc32c) == ("shipped", big_log.size, big_log.crc)
    (shipped,) = [f for f in fs.list_dir(path) if f.name.endswith(".log")]
    assert shipped.size == big_log.size


def test_a_1_gib_segment_to_a_local_dir(big_log: BigLog, tmp_path: Path) -> None:
    target = tmp_path / "segments"
    config = tmp_path / "ship.toml"
    config.write_text(
        f'[ship]\nlog_dirs = ["{big_log.log_dir}"]\nto = "{target}"\ntopics = ["orders"]\n'
    )
    try:
        peak, summary = _ship_measured(config, tmp_path)
        _check_shipped(big_log, summary, Storage(), str(target / "orders-0"))
    finally:
        shutil.rmtree(target, ignore_errors=True)
    assert peak < LIMIT_MIB, f"peak RSS {peak:.0f} MiB"


def test_a_1_gib_segment_to_s3(big_log: BigLog, minio: MinioServer, tmp_path: Path) -> None:
    bucket = minio.make_bucket(f"mem-{uuid.uuid4().hex[:12]}")
    settings = "\n".join(f'"{k}" = "{v}"' for k, v in minio.spark_settings().items())
    config = tmp_path / "ship.toml"
    config.write_text(
        f'[ship]\nlog_dirs = ["{big_log.log_dir}"]\nto = "s3a://{bucket}/segments"\n'
        f'topics = ["orders"]\n[spark]\n{settings}\n'
    )
    try:
        peak, summary = _ship_measured(config, tmp_path)
        storage = Storage.of(minio.spark_settings())
        _check_shipped(big_log, summary, storage, f"s3a://{bucket}/segments/orders-0")
    finally:
        minio.client().rm(bucket, recursive=True)  # 1 GiB less on the test run's disk
    assert peak < LIMIT_MIB, f"peak RSS {peak:.0f} MiB"
