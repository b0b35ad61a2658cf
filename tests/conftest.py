"""The one Spark session of a test run, started only when a test asks for it."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from pyspark.sql import SparkSession

from segcompact.spark.session import get_spark
from tests.support.minio import MinioServer
from tests.support.spark import JVM_OPTIONS
from tests.support.suite_order import rank

# No test asserts a time: hypothesis's per-example deadline (200 ms) failed examples on a
# loaded two-core machine, where a property that touches the disk may wait on another process.
settings.register_profile("segcompact", deadline=None)
settings.load_profile("segcompact")


def pytest_configure(config: pytest.Config) -> None:
    """The test run's own cache directory (``XDG_CACHE_HOME``) for what segcompact caches
    there (the Spark home of links, the JVM's class archive), not the user's; its CLI
    subprocesses share it."""
    cache = tempfile.mkdtemp(prefix="segcompact-test-cache-")
    os.environ["XDG_CACHE_HOME"] = cache
    atexit.register(shutil.rmtree, cache, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest directories' files first (``tests/support/suite_order.py``); a file's tests
    stay together and in their order."""
    tests = Path(__file__).parent
    items.sort(key=lambda item: rank(item.path, tests))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark(
        app_name="segcompact-tests",
        master="local[2]",
        conf={"spark.driver.extraJavaOptions": JVM_OPTIONS},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_conf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``SPARK_CONF_DIR`` giving CLI subprocesses the JIT settings of the test session.

    A user's way to tune the driver JVM that ``segcompact`` starts; here it only makes the
    short-lived test JVMs start faster (same work).
    """
    folder = tmp_path_factory.mktemp("spark-conf")
    (folder / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {JVM_OPTIONS}\n")
    return folder


@pytest.fixture(scope="session")
def minio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MinioServer]:
    """A real S3 server (MinIO) on 127.0.0.1, one per test run, started only when a test asks
    for it (the object-store tests, the cluster's)."""
    with MinioServer(tmp_path_factory.mktemp("minio")) as server:
        yield server
