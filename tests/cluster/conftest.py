"""One Spark standalone cluster (a master and two single-core workers) for the tests of this
directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.spark_cluster import SparkCluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    with SparkCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1) as started:
        yield started
