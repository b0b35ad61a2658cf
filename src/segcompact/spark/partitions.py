"""The partitions table: what each micro-batch adds to a partition's numbers, and whether a
partition is due for re-materialisation.

A batch's numbers come in two steps: :func:`row_shares` are a row's share of them, computed
in the batch's one scan (``spark.scan``), :func:`batch_stats` adds them up per partition,
and :func:`merge_batch_stats` adds those to the table. Whether a partition is due is
``compaction.triggers.decision`` of its row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from segcompact.clock import at_ms
from segcompact.delta.merge_sql import BY_PARTITION, RowsMerge
from segcompact.spark.frames import local_rows
from segcompact.spark.state_files import FiledWinners, named_files
from segcompact.spark.tables import Table

# What one batch adds to a partition, in the order the rows of batch_stats hold them.
_STATS_DDL = (
    "topic string, partition int, log_end_offset long, dirty_bytes long, segments long, "
    "records long, first_dirty_timestamp timestamp, uncleanable_reason string, "
    "compression int, keyless_records long, bad_version_headers long"
)
_STATS_COLUMNS = [part.split()[0] for part in _STATS_DDL.split(", ")]


def candidate_bytes() -> Column:
    """About what a keyed record adds to the state MERGE's source where a join broadcasts it:
    its topic and key, and 96 bytes for its partition, rank and the row's layout. Only the
    MERGE's inner joins with the target can broadcast the source, and they read no value or
    header. No loop over the headers either: it would take the decoding pass's projection out
    of Spark's generated code."""
    key = F.coalesce(F.octet_length(F.col("key")), F.lit(0))
    return key + F.octet_length(F.col("topic")) + F.lit(96)


def row_shares(data: Column, plain: Column, candidate: Column) -> list[Column]:
    """A decoded batch's row's share (summary rows included) of the numbers :func:`batch_stats`
    adds up per partition. ``data``: a data record (not a marker or a summary row); ``plain``: a
    non-transactional data record at or above the log start; ``candidate``: a record the merge
    takes (its size counts in ``candidate_bytes``)."""
    summary = F.col("segment_end")
    # The source's in-task reduction counts the candidates it left out, and the earliest
    # candidate's timestamp, on the summary row.
    folded = summary & (F.coalesce(F.col("folded_records"), F.lit(0)) > 0)
    return [
        F.col("batch_last_offset").alias("last_offset"),
        F.col("segment_bytes").alias("dirty_bytes"),
        F.when(summary, 1).otherwise(0).alias("segments"),
        F.when(data, 1).otherwise(F.coalesce(F.col("folded_records"), F.lit(0))).alias("records"),
        F.when(data | folded, F.col("timestamp")).alias("first_dirty_timestamp"),
        F.col("error").alias("uncleanable_reason"),
        F.when(data, F.col("offset")).alias("last_data_offset"),
        F.when(data, F.col("compression")).alias("compression"),
        # Transactional records and markers: without either, no pending record is decided.
        F.when(~summary & F.col("is_transactional"), 1).otherwise(0).alias("txn_records"),
        F.when(plain & F.col("key").isNull(), 1).otherwise(0).alias("keyless_records"),
        F.when(plain & F.col("bad_version"), 1).otherwise(0).alias("bad_version_headers"),
        # Whether the segments reduced with this one left one candidate per key (null: the
        # plain record stream), and how many they were.
        F.when(summary, F.coalesce(F.col("one_per_key"), F.lit(False))).alias("one_per_key"),
        F.when(summary, F.coalesce(F.col("reduced_segments"), F.lit(1))).alias("reduced_segments"),
        F.when(candidate, candidate_bytes()).alias("candidate_bytes"),
        # The file its task wrote the partition's winners to, in place of their rows.
        F.col("state_file"),
    ]


def batch_stats(reduced: DataFrame) -> list[dict[str, Any]]:
    """Per partition of the batch, :func:`row_shares` added up: what the partitions table
    adds, the keyless and unreadable-version records among non-transactional ones, how many
    transactional records and markers the batch holds (``txn_records``), and whether its
    candidates are one per key (``one_per_key``: its segments were reduced together, to one
    candidate per key)."""
    rows = (
        reduced.groupBy("topic", "partition")
        .agg(
            (F.max("last_offset") + 1).alias("log_end_offset"),
            F.coalesce(F.sum("dirty_bytes"), F.lit(0)).cast("long").alias("dirty_bytes"),
            F.sum("segments").cast("long").alias("segments"),
            F.sum("records").cast("long").alias("records"),
            F.min("first_dirty_timestamp").alias("first_dirty_timestamp"),
            # Any one of the segments' reasons. A string in an aggregation buffer (``first``)
            # would sort every row of the batch (a sort-based aggregate); a list is hashed.
            F.get(F.collect_list("uncleanable_reason"), 0).alias("uncleanable_reason"),
            F.max_by("compression", "last_data_offset").cast("int").alias("compression"),
            F.sum("txn_records").alias("txn_records"),
            F.sum("keyless_records").cast("long").alias("keyless_records"),
            F.sum("bad_version_headers").cast("long").alias("bad_version_headers"),
            F.coalesce(F.sum("candidate_bytes"), F.lit(0)).cast("long").alias("candidate_bytes"),
            F.max("last_data_offset").alias("last_data_offset"),
            F.collect_list("state_file").alias("state_files"),
            # All of the partition's segments reduced together (the sizes of disjoint groups
            # add up to their largest only if there is one), to one candidate per key.
            ((F.sum("segments") == F.max("reduced_segments")) & F.bool_and("one_per_key")).alias(
                "one_per_key"
            ),
        )
        .collect()
    )
    return [r.asDict() for r in rows]


def add_filed_counts(stats: list[dict[str, Any]]) -> list[FiledWinners]:
    """Take the files the batch's tasks wrote winners to out of ``stats``, and add what they
    hold of each partition to its numbers, as their rows would."""
    files = named_files([name for r in stats for name in r.pop("state_files") or ()])
    by_partition = {(r["topic"], r["partition"]): r for r in stats}
    for f in files:
        for p in f.partitions:
            r = by_partition[(f.topic, p.partition)]
            r["records"] += p.records
            first, known = at_ms(p.first_timestamp_ms), r["first_dirty_timestamp"]
            r["first_dirty_timestamp"] = first if known is None else min(known.astimezone(), first)
            if r["last_data_offset"] is None or p.last_offset > r["last_data_offset"]:
                r["last_data_offset"], r["compression"] = p.last_offset, p.compression
    return files


def add_committed_counts(stats: list[dict[str, Any]], committed: DataFrame) -> None:
    """Add the keyless and unreadable-version records among committed transactional ones, and
    the size of the keyed ones (which the merge takes)."""
    keyed = F.col("key").isNotNull()
    counts = committed.groupBy("topic", "partition").agg(
        F.count(F.when(~keyed, 1)).alias("keyless"),
        F.count(F.when(F.col("bad_version"), 1)).alias("bad"),
        F.coalesce(F.sum(F.when(keyed, candidate_bytes())), F.lit(0)).cast("long").alias("size"),
    )
    by_tp = {(r.topic, r.partition): r for r in counts.collect()}
    for r in stats:
        c = by_tp.get((r["topic"], r["partition"]))
        if c is not None:
            r["keyless_records"] += c.keyless
            r["bad_version_headers"] += c.bad
            r["candidate_bytes"] += c.size


# What a batch's numbers do to the partitions table: a new partition starts at log start 0 and
# its dirty clock now; a known one adds them to its own. ``s.now`` is the batch's time,
# ``s.appended`` the start of the erasure clock (null but for topics with a deletion SLA).
_SUMMED = ("dirty_bytes", "segments", "records", "keyless_records", "bad_version_headers")
_BATCH_MERGE = RowsMerge(
    BY_PARTITION,
    update={
        **{name: f"t.{name} + s.{name}" for name in _SUMMED},
        "log_end_offset": "greatest(t.log_end_offset, s.log_end_offset)",
        "first_dirty_timestamp": "least(t.first_dirty_timestamp, s.first_dirty_timestamp)",
        "first_dirty_appended_at": "coalesce(t.first_dirty_appended_at, s.now)",
        "uncleanable_reason": "coalesce(t.uncleanable_reason, s.uncleanable_reason)",
        "compression": "coalesce(s.compression, t.compression)",
        "updated_at": "s.now",
        "erasure_from": "least(t.erasure_from, s.appended)",
    },
    insert={
        **{name: f"s.{name}" for name in _STATS_COLUMNS},
        "log_start_offset": "0",
        "first_dirty_appended_at": "s.now",
        "clean_bytes": "0",
        "last_materialized_at": "NULL",
        "materialized_version": "NULL",
        "materialized_log_start": "NULL",
        "output_next_horizon": "NULL",
        "updated_at": "s.now",
        "erasure_from": "s.appended",
    },
)


def merge_batch_stats(
    spark: SparkSession,
    table: Table,
    stats: list[dict[str, Any]],
    now: int,
    erased: Sequence[str] = (),
    *,
    write: tuple[str, int],
    new: bool = False,
) -> None:
    """Add one batch's numbers to the partitions table (new partitions start at log start 0),
    once per idempotent-write pair ``write``. For the topics in ``erased`` (with a deletion
    SLA, merged straight into the state), the batch's records start the erasure clock
    (``erasure_from``). ``new``: the table holds a row of none of the batch's partitions."""
    at = at_ms(now)
    rows = []
    for r in stats:
        first = r["first_dirty_timestamp"]
        first = None if first is None else first.astimezone()  # naive: local, as collected
        appended = (at if first is None else min(first, at)) if r["topic"] in erased else None
        rows.append((*(r[name] for name in _STATS_COLUMNS), at, appended))
    source = local_rows(rows, f"{_STATS_DDL}, now timestamp, appended timestamp")
    table.merge_rows(spark, source, _BATCH_MERGE, write=write, into_nothing=new)


# Start the erasure clock where it is not running, or runs from later (``s.since``).
_ERASURE_MERGE = RowsMerge(
    BY_PARTITION,
    update={"erasure_from": "s.since"},
    when="t.erasure_from IS NULL OR s.since < t.erasure_from",
)


def mark_erasure(spark: SparkSession, table: Table, appended: DataFrame, now: int) -> None:
    """Start the erasure clock of partitions whose records were just merged into the state
    (``appended``: topic, partition, appended_at, the earliest record timestamp). Only rows
    whose clock moves are updated: a partition whose clock runs from earlier already keeps its
    row, and with none to update no commit is made (each graduation of a lagged topic with a
    deletion SLA marked its partitions, and rewrote their rows, until a round took them)."""
    at = at_ms(now)
    rows = [
        (r.topic, r.partition, at if r.appended_at is None else min(r.appended_at.astimezone(), at))
        for r in appended.collect()
    ]
    if rows:
        source = local_rows(rows, "topic string, partition int, since timestamp")
        table.merge_rows(spark, source, _ERASURE_MERGE)
