"""A short-lived JVM's class archive (``spark/class_archive.py``) with a real JVM: the first
``run --once`` writes it as its JVM exits, the next one maps it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from segcompact.config import CompactorConfig, load_config
from tests.e2e.harness import delta_rows, run_cli, write_config, write_log

Completed = subprocess.CompletedProcess[str]

pytestmark = pytest.mark.spark


def run_once(work: Path, source: Path, **spark: str) -> tuple[CompactorConfig, Completed]:
    """``run --once`` on ``source``, its tables in ``work``; no SPARK_CONF_DIR."""
    config = write_config(work, [source], spark=spark or None)
    env = {"XDG_CACHE_HOME": str(work.parent / "cache")}
    done = run_cli("run", "--once", "--config", config, cwd=work.parent, env=env)
    return load_config(config), done


def test_the_first_run_writes_the_class_archive_and_the_next_maps_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    cache = tmp_path / "cache"
    # A run that compacts: its Python workers' accumulator updates reach the driver's Python
    # over a connection the JVM's exit ends, before this process's.
    config, first = run_once(tmp_path / "a", write_log(tmp_path / "in", 20261127).root)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    assert delta_rows(config, config.state.table).num_rows > 0
    found = sorted(p.name for p in (cache / "segcompact").iterdir())
    archives = [n for n in found if n.endswith(".jsa")]
    assert len(archives) == 1, found
    assert not [
        n for n in found if n.startswith((".jvm-classes", "jvm-classes")) and n not in archives
    ]
    assert (cache / "segcompact" / archives[0]).stat().st_size > 10 << 20
    # -Xshare:on: a JVM that cannot map the archive (another class path, a stale jar) fails.
    _, second = run_once(tmp_path / "b", empty, **{"spark.driver.extraJavaOptions": "-Xshare:on"})
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in (cache / "segcompact").iterdir()) == found

    # A damaged archive crashes the JVM that maps it: removed, the run starts again without.
    archive = cache / "segcompact" / archives[0]
    archive.chmod(0o600)
    with archive.open("r+b") as f:
        f.truncate(archive.stat().st_size // 4)
    _, third = run_once(tmp_path / "c", empty)
    assert third.returncode == 0, third.stderr
    assert f"the JVM crashed mapping {archive}: removed" in third.stderr
    assert not archive.exists()
    # The crash's report is nowhere: stdout is the run's summary line alone.
    assert third.stdout.startswith("run --once: ") and third.stdout.count("\n") == 1
    assert not list(tmp_path.glob("hs_err*"))
