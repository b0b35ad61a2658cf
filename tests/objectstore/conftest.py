"""A real S3 server (MinIO) for the object-store tests, one per test run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.minio import MinioServer


@pytest.fixture(scope="session")
def minio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MinioServer]:
    with MinioServer(tmp_path_factory.mktemp("minio")) as server:
        yield server
