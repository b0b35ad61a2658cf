"""``segcompact ship`` to a real S3 server (MinIO): killed with SIGKILL in the middle of a
multipart upload and started again, nothing is lost and nothing is there twice; a run that
stopped between publishing a segment and writing its manifest entry resumes without copying
it again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import segcompact
from segcompact.format.batch import build_batch
from segcompact.format.crc import crc32c
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from segcompact.ship.manifest import PartitionManifest
from segcompact.storage import Storage
from tests.support.faulty_proxy import FaultyProxy
from tests.support.minio import MinioServer
from tests.support.ship import manifest_entries

BIG_BATCHES = 40  # of 1 MiB each: five multipart parts of 8 MiB and more
_TIMEOUT_S = 120  # a bound on a shipper that never gets there, not a pass condition


def _segment(directory: Path, base: int, batches: int, value: int) -> Path:
    return SampleSegment(
        base,
        [
            build_batch([Record(base + i, 1_000 + i, b"k%d" % (i % 7), b"x" * value)])
            for i in range(batches)
        ],
    ).write(directory)


def _ship(config: Path, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(segcompact.__file__).parents[1])}
    return subprocess.Popen(
        [sys.executable, "-m", "segcompact.cli", "ship", "--config", str(config), "--once"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_position(pid: int, path: Path) -> int | None:
    """Where process ``pid`` is in reading ``path`` (None while it has not opened it)."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir() if fds.exists() else ():
        try:
            if os.readlink(fd) == str(path):
                info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
                return int(info.split("pos:", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return None


def test_kill_mid_upload_then_restart_loses_and_doubles_nothing(
    minio: MinioServer, tmp_path: Path
) -> None:
    bucket = minio.make_bucket(f"b-{uuid.uuid4().hex[:12]}")
    log_dir = tmp_path / "kafka"
    partition = log_dir / "orders-0"
    small = _segment(partition, 0, 5, 100)
    big = _segment(partition, 5, BIG_BATCHES, 1 << 20)
    _segment(partition, 5 + BIG_BATCHES, 1, 100)  # active
    config = tmp_path / "ship.toml"
    settings = "\n".join(f'"{k}" = "{v}"' for k, v in minio.spark_settings().items())
    config.write_text(
        f'[ship]\nlog_dirs = ["{log_dir}"]\nto = "s3a://{bucket}/segments"\n'
        f'topics = ["orders"]\n[spark]\n{settings}\n'
    )

    shipper = _ship(config, tmp_path)
    size = big.stat().st_size
    deadline = time.monotonic() + _TIMEOUT_S
    position = None
    while time.monotonic() < deadline and shipper.poll() is None:
        position = _read_position(shipper.pid, big)
        if position is not None and 16 << 20 <= position < size - (8 << 20):
            break
    assert position is not None and position < size, shipper.communicate()
    shipper.send_signal(signal.SIGKILL)
    shipper.wait()

    client = minio.client()
    prefix = f"{bucket}/segments/orders-0"
    assert sorted(p.rsplit("/", 1)[1] for p in client.find(prefix)) == [
        "00000000000000000000.json",
        "00000000000000000000.log",
        "owner.json",
    ]  # the big one's upload is not under its name, half or whole
    assert client.find(f"{prefix}/00000000000000000005.log") == []

    again = _ship(config, tmp_path)
    out, err = again.communicate(timeout=_TIMEOUT_S)
    assert again.returncode == 0, err
    assert out.startswith("shipped 1 segments")
    for local in (small, big):
        assert crc32c(client.cat_file(f"{prefix}/{local.name}")) == crc32c(local.read_bytes())
    storage = Storage.of(minio.spark_settings())
    fs, path = storage.resolve(f"s3a://{prefix}")
    entries = manifest_entries(PartitionManifest(fs, path))
    assert [(e.kind, e.start, e.end) for e in entries] == [
        ("shipped", 0, 5),
        ("shipped", 5, 5 + BIG_BATCHES),
    ]
    assert entries[1].size == big.stat().st_size

    # Stopped after publishing, before the manifest entry: the object is checked, not re-sent.
    modified = client.info(f"{prefix}/{big.name}")["LastModified"]
    client.rm_file(f"{prefix}/.ship/00000000000000000005.json")
    third = _ship(config, tmp_path)
    out, err = third.communicate(timeout=_TIMEOUT_S)
    assert third.returncode == 0, err
    assert out.startswith("shipped 1 segments")  # recorded, from the object already there
    restored = manifest_entries(PartitionManifest(fs, path))
    assert [(e.start, e.size, e.crc32c) for e in restored] == [
        (e.start, e.size, e.crc32c) for e in entries
    ]
    assert client.info(f"{prefix}/{big.name}")["LastModified"] == modified


def test_an_answer_lost_after_the_store_published_is_not_a_failure(
    minio: MinioServer, tmp_path: Path
) -> None:
    """The store publishes a segment but its answer is lost: botocore sends the PUT (or the
    multipart completion) again, which the name now taken refuses. The shipper finds its own
    bytes there, and records the segment as shipped, once."""
    bucket = minio.make_bucket(f"b-{uuid.uuid4().hex[:12]}")
    log_dir = tmp_path / "kafka"
    partition = log_dir / "orders-0"
    small = _segment(partition, 0, 5, 100)  # one PUT
    big = _segment(partition, 5, 9, 1 << 20)  # a multipart upload of two parts
    _segment(partition, 14, 1, 100)  # active

    def lose_publication(method: str, target: str) -> str | None:
        single = method == "PUT" and target.endswith(f"/orders-0/{small.name}")
        completion = method == "POST" and "uploadId=" in target
        return "lose" if single or completion else None

    with FaultyProxy(minio.endpoint, lose_publication) as proxy:
        settings = {**minio.spark_settings(), "spark.hadoop.fs.s3a.endpoint": proxy.endpoint}
        lines = "\n".join(f'"{k}" = "{v}"' for k, v in settings.items())
        config = tmp_path / "ship.toml"
        config.write_text(
            f'[ship]\nlog_dirs = ["{log_dir}"]\nto = "s3a://{bucket}/segments"\n'
            f'topics = ["orders"]\n[spark]\n{lines}\n'
        )
        shipper = _ship(config, tmp_path)
        out, err = shipper.communicate(timeout=_TIMEOUT_S)
    assert shipper.returncode == 0, err
    assert out.startswith("shipped 2 segments")
    assert [s.done for s in proxy.seen].count("lose") == 2  # both answers were lost
    client = minio.client()
    prefix = f"{bucket}/segments/orders-0"
    for local in (small, big):
        assert client.cat_file(f"{prefix}/{local.name}") == local.read_bytes()
    fs, path = Storage.of(minio.spark_settings()).resolve(f"s3a://{prefix}")
    entries = manifest_entries(PartitionManifest(fs, path))
    assert [(e.kind, e.start, e.end, e.size) for e in entries] == [
        ("shipped", 0, 5, small.stat().st_size),
        ("shipped", 5, 14, big.stat().st_size),
    ]
