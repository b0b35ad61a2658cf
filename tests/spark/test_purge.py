"""Deleted rows purged (``spark.purge``): the files a deletion vector marks rows of rewritten
without them, and no other; the rows the snapshot's files physically hold are the live rows.

Real Spark and Delta on a local master; the rewrite runs no task that needs a session in the
executor's JVM, which ``tests/cluster/`` checks on a standalone cluster.
"""

from __future__ import annotations

import json
import uuid
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from segcompact.spark import purge
from segcompact.spark.conflicts import CONFLICTS
from segcompact.spark.purge import bins, purge_deleted_rows
from segcompact.spark.tables import Table

SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType(), False),
        T.StructField("k", T.IntegerType(), False),
        T.StructField("v", T.StringType(), False),
    ]
)


def _physical_rows(path: Path) -> list[tuple[str, int, str]]:
    """Every row the snapshot's files hold, deletion vectors not applied (the topic from each
    file's directory)."""
    rows = []
    for uri in DeltaTable(str(path)).file_uris():
        topic = Path(uri).parent.name.removeprefix("topic=")
        rows += [(topic, r["k"], r["v"]) for r in pq.read_table(uri).to_pylist()]
    return sorted(rows)


def _commit(path: Path, version: int) -> list[dict[str, object]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("by", "delta"), [("path", "open source"), ("name", "open source"), ("path", "a runtime's")]
)
def test_only_the_files_with_deleted_rows_are_rewritten(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by: str, delta: str
) -> None:
    """With open-source Delta, segcompact's rewrite; where the JVM has another Delta (as on
    Databricks' runtime), that Delta's own REORG PURGE, run here by the open-source one."""
    assert purge.open_source_delta(spark)
    if delta != "open source":
        monkeypatch.setattr(purge, "open_source_delta", lambda spark: False)
    path = tmp_path / "t"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (topic string NOT NULL, k int NOT NULL, v string NOT NULL) "
        "USING delta PARTITIONED BY (topic) TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
    )
    for n in range(3):  # topics a and b: three files each; c: one
        topics = ("a", "b", "c") if n == 0 else ("a", "b")
        rows = [(t, 100 * n + k, f"{t}-{n}-{k}") for t in topics for k in range(50)]
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").save(
            str(path)
        )
    # Deleted rows in one of a's files, and in c's lone file (which OPTIMIZE would skip).
    spark.sql(f"DELETE FROM delta.`{path}` WHERE v IN ('a-0-5', 'a-0-6', 'c-0-7')")
    deleted = {"a-0-5", "a-0-6", "c-0-7"}
    assert deleted <= {v for _, _, v in _physical_rows(path)}  # marked, not yet gone
    before = DeltaTable(str(path))
    files_before = set(before.file_uris())
    name = str(path)
    if by == "name":
        name = f"default.purge_{uuid.uuid4().hex[:8]}"  # a catalog name: two parts
        spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{path}'")
    table = Table(name, SCHEMA)
    live = sorted((r.topic, r.k, r.v) for r in spark.read.format("delta").load(str(path)).collect())

    version = purge_deleted_rows(spark, table)

    assert version == before.version() + 1
    assert _physical_rows(path) == live
    assert not deleted & {v for _, _, v in _physical_rows(path)}
    after = set(DeltaTable(str(path)).file_uris())
    removed, added = files_before - after, after - files_before
    # The two files that held deleted rows went, each replaced by one of its topic's; the
    # other four files stayed as they were.
    assert sorted(Path(f).parent.name for f in removed) == ["topic=a", "topic=c"]
    assert sorted(Path(f).parent.name for f in added) == ["topic=a", "topic=c"]
    actions = _commit(path, version)
    (info,) = [a["commitInfo"] for a in actions if "commitInfo" in a]
    assert info["operation"] == "REORG"
    assert [a["remove"]["dataChange"] for a in actions if "remove" in a] == [False, False]
    assert all(not a["add"]["dataChange"] for a in actions if "add" in a)

    # Nothing left to purge: no commit, the version read.
    if delta == "open source":
        assert purge_deleted_rows(spark, table) == version
        assert DeltaTable(str(path)).version() == version


@given(
    files=st.lists(
        st.tuples(st.sampled_from("abc"), st.integers(min_value=0, max_value=100)), max_size=30
    ),
    limit=st.integers(min_value=1, max_value=150),
)
def test_bins_pack_each_table_partition_as_optimize_does(
    files: list[tuple[str, int]], limit: int
) -> None:
    groups = [g for g, _ in files]
    sizes = [s for _, s in files]
    result = bins(groups, sizes, limit)
    assert sorted(i for b in result for i in b) == list(range(len(files)))
    for b in result:
        assert b
        assert len({groups[i] for i in b}) == 1  # one table partition: one written file
        assert len(b) == 1 or sum(sizes[i] for i in b) <= limit
    # A bin closes only when the next file of its partition (the smallest left) would not fit.
    for group in set(groups):
        mine = [b for b in result if groups[b[0]] == group]
        for this, after in pairwise(mine):
            assert sum(sizes[i] for i in this) + sizes[after[0]] > limit


@pytest.mark.spark
def test_a_concurrent_delete_of_a_purged_file_conflicts(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit between the purge's read and its own that removes a file it rewrote (a DELETE
    in the same file): the purge fails with Delta's conflict, which the upkeep retries, and
    neither delete comes back."""
    path = tmp_path / "t"
    spark.sql(
        f"CREATE TABLE delta.`{path}` (topic string NOT NULL, k int NOT NULL, v string NOT NULL) "
        "USING delta PARTITIONED BY (topic) TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
    )
    rows = [("a", k, f"a-{k}") for k in range(100)]
    spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").save(
        str(path)
    )
    spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 1")
    written = purge._rearranged

    def after_a_concurrent_delete(spark: SparkSession, add_file: Any) -> Any:
        if DeltaTable(str(path)).version() == 2:  # once: the purge has written its file
            spark.sql(f"DELETE FROM delta.`{path}` WHERE k = 2")
        return written(spark, add_file)

    monkeypatch.setattr(purge, "_rearranged", after_a_concurrent_delete)
    with pytest.raises(CONFLICTS):
        purge.purge_deleted_rows(spark, Table(str(path), SCHEMA))
    live = {r.k for r in spark.read.format("delta").load(str(path)).collect()}
    assert live == set(range(100)) - {1, 2}
    assert DeltaTable(str(path)).version() == 3  # the concurrent DELETE's, and no purge
