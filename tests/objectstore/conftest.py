"""Fixtures of the object-store tests: a fresh bucket of the run's MinIO, and segcompact's
storage seam configured for it."""

from __future__ import annotations

import uuid

import pytest

from segcompact.storage import Storage
from tests.support.minio import MinioServer


@pytest.fixture
def bucket(minio: MinioServer) -> str:
    return minio.make_bucket(f"b-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def storage(minio: MinioServer) -> Storage:
    return Storage.of(minio.spark_settings())
