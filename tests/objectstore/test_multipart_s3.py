"""The shipper's S3 uploads on a real S3 server (MinIO): one part buffer, sent part after part,
the object published whole by the completion or not at all."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from segcompact.storage import Storage
from segcompact.storage.multipart import PART_BYTES, MultipartNewFile
from tests.support.faulty_proxy import FaultyProxy
from tests.support.minio import MinioServer


def _pending(client: Any, bucket: str) -> list[str]:
    """The multipart uploads begun and neither completed nor aborted."""
    out = client.call_s3("list_multipart_uploads", Bucket=bucket)
    return [u["Key"] for u in out.get("Uploads", [])]


@pytest.mark.parametrize("size", [0, 100, PART_BYTES, 2 * PART_BYTES + 12_345])
def test_an_upload_is_published_whole_in_any_size(storage: Storage, bucket: str, size: int) -> None:
    fs, path = storage.resolve(f"s3a://{bucket}/p/{size}.log")
    data = os.urandom(size)
    new = fs.new_file(path)
    assert isinstance(new, MultipartNewFile)
    for start in range(0, size, 1_000_003):  # writes that straddle the parts' edges
        new.write(data[start : start + 1_000_003])
    assert not fs.exists(path)  # nothing is there before it is published
    assert new.publish()
    assert fs.read_bytes(path) == data
    assert _pending(fs.fs, bucket) == []


def test_a_name_taken_is_not_overwritten_and_discard_leaves_nothing(
    storage: Storage, bucket: str
) -> None:
    fs, path = storage.resolve(f"s3a://{bucket}/p/0.log")
    assert fs.create_exclusive(path, b"first")
    late = fs.new_file(path)
    late.write(os.urandom(PART_BYTES + 1))  # one part sent: a multipart upload under way
    assert _pending(fs.fs, bucket) == ["p/0.log"]
    assert not late.publish()
    assert fs.read_bytes(path) == b"first"
    assert _pending(fs.fs, bucket) == []

    other = fs.join(f"s3a://{bucket}/p", "1.log")
    dropped = fs.new_file(other)
    dropped.write(os.urandom(PART_BYTES))
    dropped.discard()
    assert not fs.exists(other)
    assert _pending(fs.fs, bucket) == []


def _is_part(number: int) -> Callable[[str, str], bool]:
    return lambda method, target: method == "PUT" and f"partNumber={number}" in target


@pytest.mark.parametrize("fault", ["503", "drop", "lose"])
def test_a_part_that_fails_once_is_sent_again_whole(
    minio: MinioServer, bucket: str, fault: str
) -> None:
    """A store's 503, a connection dropped mid-part and a part's answer lost: botocore sends
    the part again, rewinding the stream over the part buffer, and the object is whole."""
    part_two = _is_part(2)
    with FaultyProxy(minio.endpoint, lambda m, t: fault if part_two(m, t) else None) as proxy:
        settings = {**minio.spark_settings(), "spark.hadoop.fs.s3a.endpoint": proxy.endpoint}
        fs, path = Storage.of(settings).resolve(f"s3a://{bucket}/p/retried.log")
        data = os.urandom(2 * PART_BYTES + 12_345)
        new = fs.new_file(path)
        new.write(data)
        assert new.publish()
    sent = [s for s in proxy.seen if part_two(s.method, s.target)]
    assert [s.done for s in sent] == [{"drop": "dropped"}.get(fault, fault), "passed"]
    assert sent[-1].body_bytes == PART_BYTES  # the retry sent the whole part
    assert minio.client().cat_file(f"{bucket}/p/retried.log") == data
    assert _pending(minio.client(), bucket) == []
