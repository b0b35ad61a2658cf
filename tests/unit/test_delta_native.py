"""delta-rs's VACUUM, versions and commit times on a table it wrote (no JVM)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake
from deltalake.exceptions import DeltaError

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


def test_read_filters_rows_and_columns_and_reads_deletion_vector_tables_by_sql(
    tmp_path: Path,
) -> None:
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    rows = delta_native.read(delta_native.open_table(str(table)), ["k"], pc.field("k") >= 2)
    assert rows is not None and rows.to_pylist() == [{"k": 2}, {"k": 3}]

    dv = tmp_path / "dv"
    config = {"delta.enableDeletionVectors": "true"}
    write_deltalake(str(dv), pa.table({"k": [1, 2], "v": ["a", "b"]}), configuration=config)
    opened = delta_native.open_table(str(dv))
    with pytest.raises(DeltaError):
        opened.to_pyarrow_dataset()  # what delta-rs' Arrow reader says of deletion vectors
    rows = delta_native.read(opened, ["v"], pc.field("k") == 2)
    assert rows is not None and rows.to_pylist() == [{"v": "b"}]
    assert not delta_native.vacuum(opened), (
        "delta-rs would delete live deletion vectors: Spark must vacuum"
    )


def test_smallest_from_file_statistics(tmp_path: Path) -> None:
    table = tmp_path / "t"
    ts = pa.timestamp("us", tz="UTC")
    write_deltalake(str(table), pa.table({"h": pa.array([None, None], ts)}))
    opened = delta_native.open_table(str(table))
    assert delta_native.smallest(opened, "h") is None, "a file of nulls holds no value"
    write_deltalake(str(table), pa.table({"h": pa.array([5_000_000, None], ts)}), mode="append")
    write_deltalake(str(table), pa.table({"h": pa.array([9_000_000], ts)}), mode="append")
    least = delta_native.smallest(delta_native.open_table(str(table)), "h")
    assert least is not None and least.timestamp() == 5.0

    bare = tmp_path / "bare"
    config = {"delta.dataSkippingNumIndexedCols": "0"}
    write_deltalake(str(bare), pa.table({"h": pa.array([1], ts)}), configuration=config)
    with pytest.raises(LookupError):
        delta_native.smallest(delta_native.open_table(str(bare)), "h")
