"""Deleted rows purged: the files of a Delta table that a deletion vector marks rows of,
rewritten without those rows in one commit.

A MERGE into a table with deletion vectors marks the rows it replaces deleted and leaves them in
their files; only a rewrite of those files removes them, and VACUUM then the old files. Delta's
``REORG TABLE … APPLY (PURGE)`` is that rewrite, but Delta 4.4's first reads the footer of every
file of the table in a Spark job (for columns a schema change dropped:
``DeltaPurgeOperation.filterFilesToReorg``) whose tasks call ``SparkSession.active``, which only
the driver's JVM has: it fails on any cluster whose executors run in JVMs of their own
(standalone, YARN, Kubernetes; with a local master the tasks share the driver's JVM). Delta's
OPTIMIZE cannot stand in for it: it drops a table partition's lone file, deletion vector or not.

So this does what REORG's ``OptimizeExecutor`` does, less that job, through Delta's JVM classes
(``DeltaLog``, ``OptimisticTransaction``: Delta's open-source build, not Databricks' own): a
transaction on the newest snapshot takes the files with a deletion vector, reads their live rows
through Delta (which applies the vectors), writes them (files of up to Delta's
``optimize.maxFileSize``, each from one table partition) and commits them with the old files'
removal, as a ``REORG`` with ``dataChange = false``. A concurrent commit that removed one of
those files makes the commit fail with Delta's conflict (``ConcurrentDeleteReadException``),
which the caller's retry of the upkeep runs again on the newer snapshot. No file with a deletion
vector: no job, no commit.

Where the JVM has no open-source Delta (Databricks' runtime ships its own under other class
names, and its REORG has no such job), the table gets ``REORG TABLE … APPLY (PURGE)`` instead:
:func:`open_source_delta` decides, once per session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from py4j.java_gateway import JavaClass
from pyspark.sql import DataFrame, SparkSession

from segcompact.spark.table_reader import qualify
from segcompact.spark.tables import Table

# Delta's target size of a file OPTIMIZE and REORG write (and its default, 1 GiB).
MAX_FILE_SIZE = "spark.databricks.delta.optimize.maxFileSize"
_DEFAULT_MAX_FILE_SIZE = 1 << 30


def purge_deleted_rows(spark: SparkSession, table: Table) -> int:
    """Rewrite ``table``'s files that hold rows a deletion vector marks deleted; the version
    from which no file of the snapshot holds such a row (the purge's commit, or the version
    read when no file had a deletion vector)."""
    jvm = spark._jvm
    assert jvm is not None
    if not open_source_delta(spark):
        spark.sql(f"REORG TABLE {table.sql_name(spark)} APPLY (PURGE)")
        return table.reader(spark).version()
    delta_log, catalog_table = _open(spark, table)
    txn = delta_log.startTransaction(catalog_table, jvm.scala.Option.empty())
    snapshot = txn.snapshot()
    files = list(snapshot.allFiles().where("deletionVector IS NOT NULL").collectAsList())
    if not files:
        return int(snapshot.version())
    txn.trackFilesRead(_seq(spark, files))
    limit = int(spark.conf.get(MAX_FILE_SIZE, None) or _DEFAULT_MAX_FILE_SIZE)
    groups = [_partition(spark, f) for f in files]
    reads = [
        DataFrame(
            delta_log.createDataFrame(
                snapshot, _seq(spark, [files[i] for i in b]), False, jvm.scala.Some("Optimize")
            ),
            spark,
        ).coalesce(1)  # one task, so one file: the bin is of one table partition
        for b in bins(groups, [int(f.size()) for f in files], limit)
    ]
    rows = reads[0]
    for more in reads[1:]:
        rows = rows.unionAll(more)
    written = txn.writeFiles(rows._jdf, jvm.scala.Option.empty(), True, _seq(spark, []))
    added = [_rearranged(spark, a) for a in _list(spark, written)]
    now = time.time_ns() // 1_000_000  # a removal's time, as Delta stamps it: the wall clock's
    removed = [f.removeWithTimestamp(now, False) for f in files]
    reorg = getattr(jvm.org.apache.spark.sql.delta, "DeltaOperations$Reorg")(_seq(spark, []), True)
    return int(txn.commit(_seq(spark, added + removed), reorg))


def bins(groups: Sequence[Any], sizes: Sequence[int], limit: int) -> list[list[int]]:
    """The files (by index) in bins to rewrite one file each, as Delta's OPTIMIZE bins them:
    per group (table partition), smallest first, a bin closed when the next file would take it
    past ``limit`` bytes (a file larger than ``limit`` alone in its bin)."""
    by_group: dict[Any, list[int]] = {}
    for i, group in enumerate(groups):
        by_group.setdefault(group, []).append(i)
    result: list[list[int]] = []
    for members in by_group.values():
        current: list[int] = []
        total = 0
        for i in sorted(members, key=lambda i: sizes[i]):
            if current and total + sizes[i] > limit:
                result.append(current)
                current, total = [], 0
            current.append(i)
            total += sizes[i]
        result.append(current)
    return result


def open_source_delta(spark: SparkSession) -> bool:
    """Whether the session's JVM has open-source Delta's classes (``delta-spark``), which the
    rewrite uses; Databricks' runtime has its own Delta instead."""
    jvm = spark._jvm
    assert jvm is not None
    return isinstance(jvm.org.apache.spark.sql.delta.DeltaLog, JavaClass)


def _open(spark: SparkSession, table: Table) -> tuple[Any, Any]:
    """The table's ``DeltaLog`` and its catalog entry (a Scala ``Option``: none for a path)."""
    jvm = spark._jvm
    assert jvm is not None
    session = spark._jsparkSession
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
    if table.is_path:
        return delta_log.forTable(session, qualify(spark, table.name)), jvm.scala.Option.empty()
    name = session.sessionState().sqlParser().parseTableIdentifier(table.name)
    entry = session.sessionState().catalog().getTableMetadata(name)
    return delta_log.forTable(session, entry), jvm.scala.Some(entry)


def _partition(spark: SparkSession, add_file: Any) -> tuple[tuple[str, str], ...]:
    """A file's table partition: its partition values, in order."""
    jvm = spark._jvm
    assert jvm is not None
    values = jvm.scala.jdk.javaapi.CollectionConverters.asJava(add_file.partitionValues())
    return tuple(sorted(dict(values).items()))


def _rearranged(spark: SparkSession, add_file: Any) -> Any:
    """The written file's ``AddFile`` with ``dataChange = false``, as OPTIMIZE commits its
    own (through the action's JSON, the Delta protocol's form)."""
    jvm = spark._jvm
    assert jvm is not None
    action = json.loads(add_file.json())
    action["add"]["dataChange"] = False
    return jvm.org.apache.spark.sql.delta.actions.Action.fromJson(json.dumps(action))


def _list(spark: SparkSession, seq: Any) -> list[Any]:
    jvm = spark._jvm
    assert jvm is not None
    return list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


def _seq(spark: SparkSession, items: Iterable[Any]) -> Any:
    """A Scala ``Seq`` of JVM objects."""
    jvm = spark._jvm
    assert jvm is not None
    values = jvm.java.util.ArrayList()
    for item in items:
        values.add(item)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(values).toSeq()
