"""The table reader: which engine reads a table (from its location, once), and delta-rs's
reads, VACUUM, versions and commit times on tables it wrote (no JVM)."""

from __future__ import annotations

import os
import string
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake
from deltalake.exceptions import DeltaError
from hypothesis import given
from hypothesis import strategies as st

from segcompact.delta.location import local_path
from segcompact.delta.native import NativeReader, open_reader, smallest
from segcompact.delta.pinned import Pinned
from segcompact.storage import Storage


class Unread:
    """Spark's place beside delta-rs: what delta-rs leaves to it is counted, not read (no JVM
    here)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def _ask(self, what: str) -> Any:
        self.asked.append(what)
        return None

    def schema_json(self) -> str | None:
        return self._ask("schema_json")

    def version(self) -> int:
        return self._ask("version")

    def properties(self) -> dict[str, str]:
        return self._ask("properties")

    def commit_times(self, since: int) -> dict[int, int]:
        return self._ask("commit_times")

    def arrow(
        self, columns: Sequence[str] | None = None, where: pc.Expression | None = None
    ) -> pa.Table:
        return self._ask("arrow")

    def may_hold_rows(self) -> bool:
        return self._ask("may_hold_rows")

    def may_hold_until(self, column: str, ms: int) -> bool:
        return self._ask("may_hold_until")

    def small_files(
        self, below: int, partitions: Collection[tuple[str, int]]
    ) -> tuple[int, dict[tuple[Any, ...], int]]:
        return self._ask("small_files")

    def pinned(self) -> Pinned | None:
        return self._ask("pinned")


def _reader(path: Path) -> NativeReader:
    return NativeReader(str(path), {}, Unread())


def _files(path: Path) -> set[str]:
    return {p.name for p in path.iterdir() if p.suffix == ".parquet"}


_NAME = st.builds(
    str.__add__,
    st.sampled_from(string.ascii_lowercase),
    st.text(string.ascii_lowercase + string.digits + "_", max_size=7),
)


@given(parts=st.lists(_NAME, min_size=2, max_size=3))
def test_a_catalog_name_is_read_by_spark(parts: list[str]) -> None:
    spark = Unread()
    assert open_reader(".".join(parts), Storage(), spark) is spark


@given(
    scheme=st.sampled_from(["abfss://c@a.dfs.core.windows.net", "hdfs://nn:8020", "dbfs:"]),
    path=st.lists(_NAME, min_size=1, max_size=3),
)
def test_a_store_delta_rs_is_not_given_is_read_by_spark(scheme: str, path: list[str]) -> None:
    spark = Unread()
    assert open_reader(f"{scheme}/{'/'.join(path)}", Storage(), spark) is spark


@given(path=st.lists(_NAME, min_size=1, max_size=3), relative=st.booleans(), uri=st.booleans())
def test_a_local_path_is_read_by_delta_rs_at_its_absolute_path(
    path: list[str], relative: bool, uri: bool
) -> None:
    expected = os.path.abspath("/".join(path) if relative else "/tmp/" + "/".join(path))
    location = f"file:{expected}" if uri else "/".join(path) if relative else expected
    spark = Unread()
    reader = open_reader(location, Storage(), spark)
    assert isinstance(reader, NativeReader) and reader.otherwise is spark
    assert reader.location == expected
    assert spark.asked == [], "choosing reads nothing"


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

    opened = _reader(table)
    assert opened.version() == 1
    assert opened.vacuum()

    assert _files(table) == live, "the overwritten file and the orphan must go, the live stay"
    reopened = _reader(table)
    times = reopened.commit_times(1)
    assert min(times) == 1 and max(times) == reopened.version()
    assert reopened.commit_times(reopened.version() + 1) == {}
    assert reopened.may_hold_rows()
    pinned = reopened.pinned()
    assert pinned is not None and pinned.open().version() == reopened.version()


def test_local_path_of_a_location() -> None:
    assert local_path("file:/tmp/a%20b/state") == "/tmp/a b/state"
    assert local_path("/tmp/state") == "/tmp/state"
    assert local_path("s3a://bucket/state") is None
    assert local_path("dbfs:/state") is None


def test_arrow_filters_rows_and_columns_and_reads_deletion_vector_tables_by_sql(
    tmp_path: Path,
) -> None:
    table = tmp_path / "t"
    write_deltalake(str(table), pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    rows = _reader(table).arrow(["k"], pc.field("k") >= 2)
    assert rows.to_pylist() == [{"k": 2}, {"k": 3}]

    dv = tmp_path / "dv"
    config = {"delta.enableDeletionVectors": "true"}
    write_deltalake(str(dv), pa.table({"k": [1, 2], "v": ["a", "b"]}), configuration=config)
    opened = _reader(dv)
    with pytest.raises(DeltaError):
        opened.table.to_pyarrow_dataset()  # what delta-rs' Arrow reader says of deletion vectors
    assert opened.arrow(["v"], pc.field("k") == 2).to_pylist() == [{"v": "b"}]
    assert opened.properties()["delta.enableDeletionVectors"] == "true"
    assert not opened.vacuum(), "delta-rs would delete live deletion vectors: Spark must vacuum"
    assert isinstance(opened.otherwise, Unread) and opened.otherwise.asked == []


def test_what_delta_rs_cannot_read_is_left_to_spark(tmp_path: Path) -> None:
    """A log delta-rs cannot parse: the reads with a Spark fallback go to it; a table not
    created yet is no table, without asking Spark."""
    assert _reader(tmp_path / "none").schema_json() is None
    broken = tmp_path / "broken"
    (broken / "_delta_log").mkdir(parents=True)
    (broken / "_delta_log" / "00000000000000000000.json").write_text("not a Delta log\n")
    opened = _reader(broken)
    assert opened.schema_json() is None
    assert opened.arrow(["k"]) is None
    assert opened.may_hold_rows() is None
    assert opened.small_files(1, [("t", 0)]) is None
    assert opened.pinned() is None, "executors read only what delta-rs opens"
    assert opened.may_hold_until("h", 0), "no statistics: it may"
    assert isinstance(opened.otherwise, Unread)
    assert opened.otherwise.asked == ["schema_json", "arrow", "may_hold_rows", "small_files"]


def test_small_files_count_per_topic_from_the_log(tmp_path: Path) -> None:
    table = tmp_path / "t"
    rows = pa.table({"topic": ["a", "a", "b"], "partition": [0, 1, 0], "v": ["x", "y", "z"]})
    write_deltalake(str(table), rows, partition_by=["topic"])
    write_deltalake(str(table), rows.slice(0, 1), partition_by=["topic"], mode="append")
    assert _reader(table).small_files(1 << 20, []) == (1, {("a",): 2, ("b",): 1})
    assert _reader(table).small_files(1, []) == (1, {})
    flat = tmp_path / "flat"
    write_deltalake(str(flat), rows, partition_by=["v"])
    assert _reader(flat).small_files(1 << 20, []) == (0, {}), "another layout: its owner's"


def test_smallest_from_file_statistics(tmp_path: Path) -> None:
    table = tmp_path / "t"
    ts = pa.timestamp("us", tz="UTC")
    write_deltalake(str(table), pa.table({"h": pa.array([None, None], ts)}))
    assert smallest(_reader(table).table, "h") is None, "a file of nulls holds no value"
    assert not _reader(table).may_hold_until("h", 10_000)
    write_deltalake(str(table), pa.table({"h": pa.array([5_000_000, None], ts)}), mode="append")
    write_deltalake(str(table), pa.table({"h": pa.array([9_000_000], ts)}), mode="append")
    least = smallest(_reader(table).table, "h")
    assert least is not None and least.timestamp() == 5.0
    assert _reader(table).may_hold_until("h", 5_000) and not _reader(table).may_hold_until(
        "h", 4_999
    )

    bare = tmp_path / "bare"
    config = {"delta.dataSkippingNumIndexedCols": "0"}
    write_deltalake(str(bare), pa.table({"h": pa.array([1], ts)}), configuration=config)
    with pytest.raises(LookupError):
        smallest(_reader(bare).table, "h")
    assert _reader(bare).may_hold_until("h", 0), "no statistics: it may"
