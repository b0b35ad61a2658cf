"""The shipper's S3 uploads on a real S3 server (MinIO): one part buffer, sent part after part,
the object published whole by the completion or not at all."""

from __future__ import annotations

import os
from typing import Any

import pytest

from segcompact.storage import Storage
from segcompact.storage.multipart import PART_BYTES, MultipartNewFile


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
