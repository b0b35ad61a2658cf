"""The state's small files, compacted in the partitions where a MERGE left many.

Each state MERGE writes a file into every partition it changes (deletion vectors mark the rows
it replaced in the older ones). Delta's own auto compaction (the table property
``delta.autoOptimize.autoCompact``) decides from file counts it keeps in the JVM's memory, and a
JVM that has not written a partition before compacts it at its first write, whatever it holds:
every ``run --once`` (a new JVM) rewrote each partition its MERGE changed, and purged the
deletion vectors the MERGE had just written. segcompact decides from the table's log instead,
by Delta's rule with its default sizes (fixed here): after a MERGE, the partitions it changed
that hold ``spark.databricks.delta.autoCompact.minNumFiles`` (50) files or more under 64 MiB
are compacted by one OPTIMIZE into files of up to 128 MiB (larger files stay as they are).
delta-rs counts the files; Spark, from the files' metadata, where delta-rs cannot read the
table.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from segcompact import delta_native
from segcompact.format.logdir import is_topic_name
from segcompact.spark.partitions import of_partitions
from segcompact.spark.tables import Table, session_settings
from segcompact.timing import timed

log = logging.getLogger(__name__)

MIN_FILES = "spark.databricks.delta.autoCompact.minNumFiles"
SMALL_BYTES = 64 << 20
# OPTIMIZE as auto compaction runs it: files under 64 MiB into files of up to 128 MiB.
_OPTIMIZE = {
    "spark.databricks.delta.optimize.minFileSize": str(SMALL_BYTES),
    "spark.databricks.delta.optimize.maxFileSize": str(2 * SMALL_BYTES),
}
_BY = ("topic", "partition")


def compact_small_files(
    spark: SparkSession, table: Table, partitions: Collection[tuple[str, int]]
) -> None:
    """OPTIMIZE the partitions of ``partitions`` that hold many small files (none in a table
    not partitioned by ``(topic, partition)``, made so before segcompact: its layout is its
    owner's)."""
    if not partitions:
        return
    least = int(spark.conf.get(MIN_FILES, "50") or 50)
    counts = _small_files(spark, table, partitions)
    # Kafka's topic names need no quoting in SQL; another name is left uncompacted.
    due = sorted(
        (topic, partition)
        for topic, partition in partitions
        if counts.get((topic, partition), 0) >= least and is_topic_name(topic)
    )
    if not due:
        return
    where = " OR ".join(f"(topic = '{topic}' AND partition = {int(p)})" for topic, p in due)
    with timed(log, "compaction"), session_settings(spark, _OPTIMIZE):
        table.delta(spark).optimize().where(where).executeCompaction()
    log.info("compacted %d partitions of %s", len(due), table.name)


def _small_files(
    spark: SparkSession, table: Table, partitions: Collection[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """Per partition, its files under ``SMALL_BYTES``; none where the table is not partitioned
    by ``(topic, partition)``."""
    try:
        native = table.native(spark)
        if native is not None:
            return delta_native.small_files(native, SMALL_BYTES)
    except delta_native.DeltaError:
        pass  # a protocol feature delta-rs lacks: Spark counts
    detail = table.delta(spark).detail().select("partitionColumns").first()
    if detail is None or list(detail[0] or []) != list(_BY):
        return {}
    files = (
        table.read(spark)
        .where(of_partitions(partitions))
        .select("topic", "partition", "_metadata.file_path", "_metadata.file_size")
        .where(F.col("file_size") < SMALL_BYTES)
        .distinct()
        .groupBy("topic", "partition")
        .count()
    )
    return {(r["topic"], r["partition"]): r["count"] for r in files.collect()}
