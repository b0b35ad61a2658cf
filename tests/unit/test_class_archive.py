"""Which archive of its classes a short-lived JVM maps or writes (``spark/class_archive.py``),
on a Spark home of files standing in for jars; the JVM's side is ``tests/e2e``'s."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from segcompact.spark.class_archive import _LAUNCHER_VARIABLES as LAUNCHER
from segcompact.spark.class_archive import JAVA_OPTION_VARIABLES, ClassArchive, class_archive

SETTINGS = {"spark.driver.defaultJavaOptions": "-XX:TieredStopAtLevel=1"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "jars").mkdir(parents=True)
    for name in ("spark-core.jar", "scala-library.jar"):
        (home / "jars" / name).write_bytes(b"jar")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for variable in (*LAUNCHER, "SPARK_CONF_DIR", *JAVA_OPTION_VARIABLES):
        monkeypatch.delenv(variable, raising=False)
    return home


def written(home: Path, settings: dict[str, str] | None = None) -> ClassArchive:
    """The archive a first JVM would write, as written."""
    archive = class_archive(str(home), settings or SETTINGS)
    assert archive is not None and archive.part is not None
    assert f"-XX:ArchiveClassesAtExit={archive.part}" in archive.java_options
    archive.part.write_bytes(b"archive")
    archive.part.replace(archive.path)
    return archive


def test_the_first_jvm_writes_the_archive_and_the_next_map_it(home: Path) -> None:
    first = written(home)
    assert first.path.parent == home.parent / "cache" / "segcompact"
    again = class_archive(str(home), SETTINGS)
    assert again == ClassArchive(first.path)
    assert f"-XX:SharedArchiveFile={first.path}" in again.java_options
    assert "-Xlog:cds*=off" in again.java_options  # nothing on a command's stdout
    # -Xshare:on or auto changes nothing of the archive: the same one.
    on = {"spark.driver.extraJavaOptions": "-Xshare:on", **SETTINGS}
    assert class_archive(str(home), on) == ClassArchive(first.path)


def test_another_jar_java_option_or_memory_gets_another_archive(home: Path) -> None:
    first = written(home)
    (home / "jars" / "spark-core.jar").write_bytes(b"another jar")
    changed = written(home)
    assert changed.path != first.path
    more = {**SETTINGS, "spark.driver.memory": "4g"}
    options = {**SETTINGS, "spark.driver.extraJavaOptions": "-Xmx40g"}
    assert (
        len({first.path, changed.path, written(home, more).path, written(home, options).path}) == 4
    )


def test_no_archive_where_the_jvm_cannot_have_one(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = {**SETTINGS, "spark.driver.extraJavaOptions": "-Xshare:off"}  # the user's choice
    assert class_archive(str(home), off) is None
    assert class_archive(str(home), {**SETTINGS, "spark.driver.extraClassPath": "/x"}) is None
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert class_archive(str(home), SETTINGS) is not None  # an empty directory is no matter
    (conf / "spark-defaults.conf").write_text("spark.ui.enabled false\n")
    assert class_archive(str(home), SETTINGS) is None  # the JVM cannot archive it


@pytest.mark.parametrize("variable", ["HADOOP_CONF_DIR", "SPARK_SUBMIT_OPTS"])
def test_no_archive_where_the_launcher_adds_what_is_not_seen_here(
    home: Path, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "/etc/hadoop")
    assert class_archive(str(home), SETTINGS) is None


def test_no_archive_in_a_cache_whose_path_spark_would_split(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "my cache"))
    assert class_archive(str(home), SETTINGS) is None


def test_a_write_that_failed_is_not_tried_again_the_same_day(home: Path) -> None:
    archive = class_archive(str(home), SETTINGS)
    assert archive is not None and archive.part is not None
    assert class_archive(str(home), SETTINGS) is None  # no archive came of the first
    tried = archive.path.with_suffix(".tried")
    day_ago = time.time() - 25 * 3600
    os.utime(tried, (day_ago, day_ago))
    again = class_archive(str(home), SETTINGS)
    assert again is not None and again.path == archive.path and again.part is not None
    assert again.part != archive.part  # each write its own file


def test_an_archive_unused_for_30_days_goes_when_another_is_written(home: Path) -> None:
    old = written(home)
    month_ago = time.time() - 31 * 24 * 3600
    os.utime(old.path, (month_ago, month_ago))
    recent = written(home, {**SETTINGS, "spark.driver.memory": "2g"})
    assert class_archive(str(home), {**SETTINGS, "spark.driver.memory": "3g"}) is not None
    assert not old.path.exists() and recent.path.exists()
    # Mapping one keeps it: its time is its last use.
    os.utime(recent.path, (month_ago, month_ago))
    assert class_archive(str(home), {**SETTINGS, "spark.driver.memory": "2g"}) is not None
    assert recent.path.stat().st_mtime > month_ago
