"""A micro-batch scanned once: every row the merge reads, marked by its kind, and held.

The source decodes a partition's segments, reduces them and classifies each record (its
version, whether it is a tombstone) in their task (``compaction.reduce``,
``compaction.rules``); this is the Spark side of that one scan, which parses no header. One
projection of the batch's rows is computed by the batch's first job and held (``spark.held``)
until the batch ends; the merge takes everything it reads from it and never reads the source
again (a batch of a lagged, transactional topic read it three times: for the winners, the
transactions and the young rows). Each row carries its share of its partition's numbers
(``partitions.row_shares``) and, by its :class:`Kind`, the record the merge needs of it: the
others keep nulls there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from segcompact.config import TopicConfig
from segcompact.spark.held import hold, release
from segcompact.spark.partitions import row_shares
from segcompact.spark.rules import per_topic
from segcompact.spark.tables import PENDING_SCHEMA, YOUNG_SCHEMA


class Kind(IntEnum):
    """What a scanned row is to the merge (the ``kind`` column; null: a row that only counts,
    such as a keyless record or one below its log start)."""

    WINNER = 1  # a candidate for the state (already reduced in its task), in ``record``
    YOUNG = 2  # a keyed record of a topic with min.compaction.lag.ms, in ``record``
    TRANSACTION = 3  # a transactional record or marker, in ``transaction``
    SUMMARY = 4  # a segment's summary row: its numbers only


_PARTITION_KEY = ("topic", "partition", "key")
# A keyed record as the state and the young table take it, but its topic, partition and key.
_RECORD = tuple(n for n in YOUNG_SCHEMA.fieldNames() if n not in _PARTITION_KEY)
# A transactional record or marker as ``read_committed`` takes it (it decides ``commit``).
_TRANSACTION = tuple(
    n for n in PENDING_SCHEMA.fieldNames() if n not in ("topic", "partition", "commit")
)


@dataclass(frozen=True, slots=True)
class Scan:
    """A batch's held rows (:func:`scan`), and the DataFrames the merge derives from them."""

    rows: DataFrame

    def records(self, kind: Kind) -> DataFrame:
        """The keyed records of ``kind`` (:attr:`Kind.WINNER` or :attr:`Kind.YOUNG`), with the
        young table's columns."""
        return self.rows.where(F.col("kind") == F.lit(int(kind))).select(
            *_PARTITION_KEY, "record.*"
        )

    def transactional(self) -> DataFrame:
        """The transactional records and markers, with the columns ``read_committed`` reads."""
        return self.rows.where(F.col("kind") == F.lit(int(Kind.TRANSACTION))).select(
            "topic", "partition", "transaction.*"
        )

    def release(self) -> None:
        release(self.rows)


def scan(
    batch: DataFrame,
    starts: DataFrame,
    topics: Mapping[str, TopicConfig],
    default: TopicConfig,
) -> Scan:
    """``batch`` (the ``kafka-segments`` source's rows, with summaries, classified by the
    ``compaction`` option) as :class:`Scan` rows, held: computed by the first job that reads
    them. ``starts``: the log start of each partition known (topic, partition,
    log_start_offset); the rules are those of ``topics``, ``default``'s for a topic not in
    them."""
    rows = batch.join(F.broadcast(starts), ["topic", "partition"], "left")
    summary = F.col("segment_end")
    data = ~summary & ~F.col("is_control")
    plain = data & ~F.col("is_transactional") & at_or_above_log_start()
    lagged = per_topic(
        F.col("topic"), topics, lambda c: F.lit(c.min_compaction_lag_ms > 0), default=default
    )
    keyed = plain & F.col("key").isNotNull()
    winner = keyed & ~lagged
    kind = (
        F.when(summary, int(Kind.SUMMARY))
        .when(F.col("is_transactional"), int(Kind.TRANSACTION))
        .when(winner, int(Kind.WINNER))
        .when(keyed, int(Kind.YOUNG))
    )
    return Scan(
        hold(
            rows.select(
                "topic",
                "partition",
                kind.cast("tinyint").alias("kind"),
                F.when(keyed, F.col("key")).alias("key"),
                F.when(keyed, _struct(_RECORD)).alias("record"),
                F.when(~summary & F.col("is_transactional"), _struct(_TRANSACTION)).alias(
                    "transaction"
                ),
                *row_shares(data, plain, winner),
            )
        )
    )


def at_or_above_log_start() -> Column:
    """After a join with the log starts (``log_start_offset``, null for a partition not known
    yet): the record is not below its log start."""
    return F.col("offset") >= F.coalesce(F.col("log_start_offset"), F.lit(0))


def _struct(names: tuple[str, ...]) -> Column:
    return F.struct(*[F.col(n) for n in names])
