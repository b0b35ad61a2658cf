"""Read-committed filtering of transactional records, across micro-batches.

A transactional record is decided by its producer's first marker (COMMIT or ABORT) after it in
the partition, which may come in a later micro-batch than the record. Until then the record
waits in the pending table, and every marker seen stays there too (a record read later may
still be decided by it); aborted records never reach compaction. As Kafka's consumers with
``isolation.level=read_committed`` see them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from segcompact.format.control import COMMIT_KEY
from segcompact.spark.held import hold, release
from segcompact.spark.tables import PENDING_SCHEMA, Table


@dataclass(frozen=True, slots=True)
class Transactions:
    """What one batch's transactional records and markers decide."""

    everything: DataFrame  # pending rows and the batch's transactional rows (held)
    committed: DataFrame  # records decided as committed, with the batch's record columns
    pending: DataFrame  # the pending table's new rows

    def release(self) -> None:
        release(self.everything)


def read_committed(
    spark: SparkSession, pending: Table, transactional: DataFrame, columns: tuple[str, ...]
) -> Transactions:
    """Decide the batch's ``transactional`` records and markers (with the pending table's
    columns but ``commit``), and those pending from earlier batches, with the markers seen so
    far; committed ones come out with ``columns``."""
    # The pending table's own columns, with each marker's decision computed.
    incoming = transactional.withColumn(
        "commit", F.when(F.col("is_control"), F.col("key") == F.lit(COMMIT_KEY))
    ).select(*PENDING_SCHEMA.fieldNames())
    # Read for the state and the pending table: the pending table read, and the duplicates
    # dropped, once.
    everything = hold(
        pending.read(spark)
        .unionByName(incoming)
        .dropDuplicates(["topic", "partition", "producer_id", "offset"])
    )
    markers = everything.where("is_control").select(
        "topic",
        "partition",
        "producer_id",
        F.col("offset").alias("marker_offset"),
        F.col("commit").alias("decision"),
    )
    waiting = everything.where(~F.col("is_control")).alias("w")
    m = markers.alias("m")
    first_marker = Window.partitionBy("topic", "partition", "producer_id", "offset").orderBy(
        "marker_offset"
    )
    # Each record is decided by its producer's first marker after it, if one was seen.
    decided = (
        waiting.join(
            m,
            (F.col("w.topic") == F.col("m.topic"))
            & (F.col("w.partition") == F.col("m.partition"))
            & (F.col("w.producer_id") == F.col("m.producer_id"))
            & (F.col("m.marker_offset") > F.col("w.offset")),
            "left",
        )
        .select("w.*", "m.marker_offset", "m.decision")
        .withColumn("n", F.row_number().over(first_marker))
        .where("n = 1")
        .drop("n", "marker_offset")
    )
    # A record seen with a later marker only is decided; one with none stays pending.
    committed = decided.where(F.col("decision")).select(*columns)
    still = decided.where(F.col("decision").isNull()).drop("decision")
    new_pending = everything.where("is_control").unionByName(still.select(*everything.columns))
    return Transactions(everything, committed, new_pending)
