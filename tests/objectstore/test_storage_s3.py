"""The storage seam on a real S3 server: what discovery, the manifest, publication and export
rely on, through ``s3a://`` URIs and the ``[spark]`` settings' S3A keys."""

from __future__ import annotations

import pytest

from segcompact.clock import ManualClock
from segcompact.config import parse_config
from segcompact.errors import ConfigError
from segcompact.export import export
from segcompact.lease import LEASE_DIR, Lease, LeaseHeld
from segcompact.manifest import Manifest
from segcompact.publication import Output, Publication, new_version_directory
from segcompact.storage import Storage
from segcompact.storage.objectstore import ObjectStore
from tests.support.minio import MinioServer


def test_exclusive_create_is_a_conditional_write(storage: Storage, bucket: str) -> None:
    fs, path = storage.resolve(f"s3a://{bucket}/m/0.json")
    assert isinstance(fs, ObjectStore)
    assert fs.create_exclusive(path, b"first")
    assert not fs.create_exclusive(path, b"second")
    assert fs.read_bytes(path) == b"first"


def test_manifest_and_discovery_on_s3(minio: MinioServer, storage: Storage, bucket: str) -> None:
    client = minio.client()
    for name in ("00000000000000000000.log", "00000000000000000010.log", "x.txt"):
        client.pipe_file(f"{bucket}/logs/t-0/{name}", b"12345")
    client.pipe_file(f"{bucket}/logs/not-a-partition/00000000000000000000.log", b"1")
    manifest = Manifest(f"s3a://{bucket}/chk/manifest", storage)
    added = manifest.discover([f"s3a://{bucket}/logs"])
    # The active (highest) segment waits for the roll, as on a local disk.
    assert [(e.seq, e.file.path, e.file.size) for e in added] == [
        (1, f"s3a://{bucket}/logs/t-0/00000000000000000000.log", 5)
    ]
    again = Manifest(f"s3a://{bucket}/chk/manifest", storage)
    assert again.entries() == manifest.entries()
    assert again.discover([f"s3a://{bucket}/logs"]) == []


def test_publication_and_export_on_s3(storage: Storage, bucket: str, tmp_path: object) -> None:
    output = Output(f"s3a://{bucket}/out", storage)
    assert output.latest("t", 0) is None
    published = []
    for version in (1, 2):
        directory = new_version_directory("t", 0, version)
        target = output.version_directory(directory)
        with_data = target.create("00000000000000000000.log")
        with_data.write(b"v%d" % version)
        with_data.close()
        pub = Publication("t", 0, version, directory, tuple(target.files))
        output.publish(pub)
        published.append(pub)
    # A second writer of version 2 is refused: the manifest is a conditional write.
    with pytest.raises(Exception, match="published by another writer"):
        output.publish(published[1])
    assert output.latest("t", 0) == published[1]
    assert output.remove_superseded("t", 0) == []
    assert [e.name for e in output.fs.list_dir(output.join(".versions", "t-0"))] == [
        published[1].directory.rsplit("/", 1)[-1]
    ]
    to = f"{tmp_path}/export"
    (done,) = export(output, to, Storage())
    assert (done.version, done.files) == (2, 1)
    with open(f"{to}/t-0/00000000000000000000.log", "rb") as f:
        assert f.read() == b"v2"


def test_missing_credentials_and_libraries_are_config_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")

    def config(output: str, table: str = "/tmp/state") -> object:
        return parse_config(
            {
                "source": {"paths": ["/tmp/in"]},
                "state": {"table": table},
                "output": {"path": output},
                "stream": {"checkpoint": "/tmp/chk"},
            },
            "c.toml",
        )

    with pytest.raises(ConfigError, match=r"\[output\] path = 's3a://b/out': no S3 credentials"):
        config("s3a://b/out").check_storage()  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"abfss:// needs the adlfs package"):
        config("abfss://c@acct.dfs.core.windows.net/out").check_storage()  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match=r"\[output\] path = 'hdfs://nn/out': unknown scheme"):
        config("hdfs://nn/out").check_storage()  # type: ignore[attr-defined]
    # Delta tables are Spark's to open: any Hadoop file system will do.
    config("/tmp/out", table="hdfs://nn/state").check_storage()  # type: ignore[attr-defined]


def test_a_lease_on_s3_refuses_a_second_job_until_released(storage: Storage, bucket: str) -> None:
    clock = ManualClock(0)
    location = f"s3a://{bucket}/state"

    def lease() -> Lease:
        return Lease([location], storage, command="run", timeout_ms=60_000, clock=clock)

    with lease(), pytest.raises(LeaseHeld, match=f"{location} is in use by `segcompact run`"):
        lease().acquire()
    with lease() as again:  # released: taken at once, at the next epoch
        fs, path = storage.resolve(f"{location}/{LEASE_DIR}")
        assert [e.name for e in fs.list_dir(path)] == [f"{2:020d}.json"]
        clock.advance(20_000)
        again.renew()
        assert [e.name for e in fs.list_dir(path)] == [f"{3:020d}.json"]
