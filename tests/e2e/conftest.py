"""Fixtures of the end-to-end tests (the Spark session is the root conftest's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.spark import JVM_OPTIONS


@pytest.fixture(scope="session")
def spark_conf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``SPARK_CONF_DIR`` giving CLI subprocesses the JIT settings of the test session.

    A user's way to tune the driver JVM that ``segcompact`` starts; here it only makes the
    short-lived test JVMs start faster.
    """
    folder = tmp_path_factory.mktemp("spark-conf")
    (folder / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {JVM_OPTIONS}\n")
    return folder
