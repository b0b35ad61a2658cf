"""delta-rs's VACUUM, versions and commit times on a table it wrote (no JVM)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from segcompact import delta_native


def _files(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if p.suffix == ".parquet"}


def test_vacuum_removes_dropped_and_unknown_files_only(tmp_path: Path) -> None:
    table = tmp_path / "t"
    config = {"delta.deletedFileRetentionDuration": "interval 0 seconds"}
    write_deltalake(str(table), pa.table({"k": [1, 2]}), configuration=config)
    first = _files(table)
    write_deltalake(str(table), pa.table({"k": [3]}), mode="overwrite")
    live = _files(table) - first
    orphan = table / "part-99999-left-by-a-failed-write.snappy.parquet"
    orphan.write_bytes(b"PAR1")
    old = time.time() - 3600
    os.utime(orphan, (old, old))

    opened = delta_native.open_table(str(table))
    assert opened.version() == 1
    assert delta_native.vacuum(opened)

    assert _files(table) == live, "the overwritten file and the orphan must go, the live stay"
    reopened = delta_native.open_table(str(table))
    times = delta_native.commit_times(reopened, 1)
    assert min(times) == 1 and max(times) == reopened.version()
    assert delta_native.commit_times(reopened, reopened.version() + 1) == {}


def test_local_path_of_a_location() -> None:
    assert delta_native.local_path("file:/tmp/a%20b/state") == "/tmp/a b/state"
    assert delta_native.local_path("/tmp/state") == "/tmp/state"
    assert delta_native.local_path("s3a://bucket/state") is None
    assert delta_native.local_path("dbfs:/state") is None
