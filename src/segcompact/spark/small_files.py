"""The state's small files, compacted in the table partitions where a MERGE left many.

A table partition is a topic (in the tables of earlier segcompacts, a Kafka partition). Each
state MERGE writes a file into every table partition it changes (deletion vectors mark the rows
it replaced in the older ones). Delta's own auto compaction (the table property
``delta.autoOptimize.autoCompact``) decides from file counts it keeps in the JVM's memory, and a
JVM that has not written a partition before compacts it at its first write, whatever it holds:
every ``run --once`` (a new JVM) rewrote each partition its MERGE changed, and purged the
deletion vectors the MERGE had just written. segcompact decides from the table's log instead,
by Delta's rule with its default sizes (fixed here): after a MERGE, the table partitions it
changed that hold ``spark.databricks.delta.autoCompact.minNumFiles`` (50) files or more under 64 MiB
are compacted by one OPTIMIZE into files of up to 128 MiB (larger files stay as they are).
delta-rs counts the files; Spark, from the files' metadata, where delta-rs cannot read the
table.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from pyspark.sql import SparkSession

from segcompact.delta.native import LAYOUT
from segcompact.format.logdir import is_topic_name
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


def compact_small_files(
    spark: SparkSession, table: Table, partitions: Collection[tuple[str, int]]
) -> None:
    """OPTIMIZE each table partition (a topic; a Kafka partition in the tables of earlier
    segcompacts) holding some of ``partitions`` that holds many small files (none in a table
    partitioned otherwise, made so before segcompact: its layout is its owner's)."""
    if not partitions:
        return
    least = int(spark.conf.get(MIN_FILES, "50") or 50)
    width, counts = table.reader(spark).small_files(SMALL_BYTES, partitions)
    # Kafka's topic names need no quoting in SQL; another name is left uncompacted.
    due = sorted(
        values
        for values in {tp[:width] for tp in partitions}
        if width and counts.get(values, 0) >= least and is_topic_name(str(values[0]))
    )
    if not due:
        return
    where = " OR ".join(
        "(" + " AND ".join(_equals(c, v) for c, v in zip(LAYOUT, values, strict=False)) + ")"
        for values in due
    )
    with timed(log, "compaction"), session_settings(spark, _OPTIMIZE):
        table.delta(spark).optimize().where(where).executeCompaction()
    log.info("compacted %d table partitions of %s", len(due), table.name)


def _equals(column: str, value: object) -> str:
    return f"{column} = '{value}'" if column == "topic" else f"{column} = {int(str(value))}"
