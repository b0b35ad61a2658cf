"""The Spark home a local session's JVM starts from: pip's pyspark less its zipped Python."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyspark
import pytest

from segcompact.spark.spark_home import spark_home, unzipped_home

REAL = Path(pyspark.__file__).parent.resolve()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of this test's own, no SPARK_HOME, workers running this Python."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    return tmp_path / "cache"


def test_the_home_links_to_pysparks_own_entries_without_the_zips(cache: Path) -> None:
    home = unzipped_home({})
    assert home is not None and Path(home).parent == cache / "segcompact"
    assert (Path(home) / "bin" / "spark-submit").resolve() == REAL / "bin" / "spark-submit"
    assert (Path(home) / "jars").resolve() == REAL / "jars"
    # What a worker would import first is gone; the rest of python/lib is there.
    real_lib = REAL / "python" / "lib"
    assert {p.name for p in real_lib.glob("*.zip")} >= {"pyspark.zip"}
    lib = Path(home) / "python" / "lib"
    assert lib.is_dir() and not lib.is_symlink()
    assert {p.name for p in lib.iterdir()} == {
        p.name for p in real_lib.iterdir() if p.suffix != ".zip"
    }
    assert {p.name for p in Path(home).iterdir()} - {"__pycache__"} == {
        p.name for p in REAL.iterdir()
    } - {"__pycache__"}


def test_the_home_is_made_once_and_found_again(cache: Path) -> None:
    first = unzipped_home({})
    assert first is not None
    marker = Path(first) / "marker"
    marker.write_text("")
    assert unzipped_home({}) == first and marker.exists()
    assert [p.name for p in (cache / "segcompact").iterdir()] == [Path(first).name]


OTHER = "other-python"  # under the test's own directory: never this interpreter


@pytest.mark.parametrize(
    ("variable", "value", "settings"),
    [
        ("SPARK_HOME", str(REAL), {}),  # the user's own Spark home
        ("PYSPARK_PYTHON", OTHER, {}),  # workers run another Python
        ("PYSPARK_DRIVER_PYTHON", OTHER, {}),  # so does the data sources' lookup
        ("PYSPARK_PYTHON", sys.executable, {"spark.pyspark.python": OTHER}),
        ("PYSPARK_PYTHON", sys.executable, {"spark.pyspark.driver.python": OTHER}),
    ],
)
def test_spark_s_own_home_where_a_python_process_may_need_the_zips(
    tmp_path: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    settings: dict[str, str],
) -> None:
    other = str(tmp_path / OTHER)
    monkeypatch.setenv(variable, other if value == OTHER else value)
    assert unzipped_home({k: other if v == OTHER else v for k, v in settings.items()}) is None
    assert not cache.exists()


def test_a_venvs_other_name_for_this_python_is_this_python(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `make` names .venv/bin/python; pytest's and segcompact's scripts start .venv/bin/python3.
    here = Path(sys.executable)
    names = ("python", "python3", f"python3.{sys.version_info.minor}")
    siblings = [here.parent / n for n in names if n != here.name and (here.parent / n).exists()]
    if not siblings or not os.path.samefile(siblings[0], here):
        pytest.skip("no other name for this interpreter beside it")
    monkeypatch.setenv("PYSPARK_PYTHON", str(siblings[0]))
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", str(siblings[0]))
    assert unzipped_home({}) is not None
    # The interpreter a venv's links lead to is another Python: it has not the venv's packages.
    base = os.path.realpath(sys.executable)
    if base != str(here):
        monkeypatch.setenv("PYSPARK_PYTHON", base)
        assert unzipped_home({}) is None


def test_spark_s_own_home_where_the_links_made_before_cannot_be_used(cache: Path) -> None:
    home = unzipped_home({})
    assert home is not None
    (Path(home) / "bin").unlink()  # say, a backup restored without its links
    assert unzipped_home({}) is None


def test_spark_s_own_home_where_no_cache_can_be_written(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    assert unzipped_home({}) is None


def test_spark_home_is_set_for_the_block_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    with pytest.raises(RuntimeError), spark_home("/somewhere"):
        assert os.environ["SPARK_HOME"] == "/somewhere"
        raise RuntimeError("the JVM did not start")
    assert "SPARK_HOME" not in os.environ
    with spark_home(None):
        assert "SPARK_HOME" not in os.environ
    monkeypatch.setenv("SPARK_HOME", "/before")
    with spark_home("/somewhere"):
        assert os.environ["SPARK_HOME"] == "/somewhere"
    assert os.environ["SPARK_HOME"] == "/before"
