"""The foreachBatch step: one micro-batch of decoded records into the Delta tables.

Order of writes matters for crash safety: the state MERGE comes first, then the young table,
the partitions table and the pending-transactions table. Each write carries Delta's
idempotent-write pair (app id, batch id), so a batch replayed after a crash skips what it
already wrote and redoes the rest from the same inputs (the pending table it reads is rewritten
last).

Topics with a ``min.compaction.lag.ms`` send their records to the young table instead of the
state; :meth:`BatchMerger.graduate` compacts them into the state once they may be compacted.
Graduation needs no idempotent-write id: merging a record into the state a second time changes
nothing, so a crash between its MERGE and its DELETE is repaired by the next graduation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.clock import Clock
from segcompact.config import CompactorConfig, TopicConfig
from segcompact.spark import rules as R
from segcompact.spark.tables import (
    PARTITIONS_SCHEMA,
    PENDING_SCHEMA,
    STATE_SCHEMA,
    YOUNG_SCHEMA,
    Table,
)

_COMMIT_KEY = bytes([0, 0, 0, 1])  # control record key: version 0, type COMMIT
_CANDIDATE_COLUMNS = (
    "topic",
    "partition",
    "key",
    "value",
    "offset",
    "timestamp",
    "timestampType",
    "headers",
    "attributes",
    "delete_horizon",
    "segment_base",
)
LONG_MAX = (1 << 63) - 1
# A classified keyed record: what the state and the young table are made from.
_KEYED_COLUMNS = tuple(YOUNG_SCHEMA.fieldNames())


@dataclass(frozen=True, slots=True)
class Tables:
    state: Table
    partitions: Table
    pending: Table
    young: Table

    @classmethod
    def at(cls, state: str, partitions: str, pending: str, young: str) -> Tables:
        return cls(
            Table(state, STATE_SCHEMA),
            Table(partitions, PARTITIONS_SCHEMA),
            Table(pending, PENDING_SCHEMA),
            Table(young, YOUNG_SCHEMA),
        )

    def ensure(self, spark: SparkSession) -> None:
        for t in (self.state, self.partitions, self.pending, self.young):
            t.ensure(spark)


@contextmanager
def idempotent_writes(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """Delta skips a write whose (app id, version) this table has committed before."""
    conf = spark.conf
    conf.set("spark.databricks.delta.write.txnAppId", app_id)
    conf.set("spark.databricks.delta.write.txnVersion", str(version))
    try:
        yield
    finally:
        conf.unset("spark.databricks.delta.write.txnAppId")
        conf.unset("spark.databricks.delta.write.txnVersion")


@dataclass(frozen=True, slots=True)
class _Transactions:
    everything: DataFrame  # pending rows and the batch's transactional rows (persisted)
    committed: DataFrame  # records decided as committed, as candidates
    pending: DataFrame  # the pending table's new rows


_STATS_SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("log_end_offset", T.LongType()),
        T.StructField("dirty_bytes", T.LongType()),
        T.StructField("segments", T.LongType()),
        T.StructField("records", T.LongType()),
        T.StructField("first_dirty_timestamp", T.TimestampType()),
        T.StructField("uncleanable_reason", T.StringType()),
        T.StructField("compression", T.IntegerType()),
        T.StructField("keyless_records", T.LongType()),
        T.StructField("bad_version_headers", T.LongType()),
    ]
)


def _add_counts(stats: list[dict[str, Any]], committed: DataFrame) -> None:
    """Add the keyless and unreadable-version records among committed transactional ones."""
    counts = committed.groupBy("topic", "partition").agg(
        F.count(F.when(F.col("key").isNull(), 1)).alias("keyless"),
        F.count(F.when(F.col("bad_version"), 1)).alias("bad"),
    )
    by_tp = {(r.topic, r.partition): r for r in counts.collect()}
    for r in stats:
        c = by_tp.get((r["topic"], r["partition"]))
        if c is not None:
            r["keyless_records"] += c.keyless
            r["bad_version_headers"] += c.bad


def _at_or_above_log_start() -> Column:
    """After a join with ``BatchMerger._log_starts``: the record is not below its log start."""
    return F.col("offset") >= F.coalesce(F.col("log_start_offset"), F.lit(0))


def _ts(ms: int) -> Column:
    return F.timestamp_millis(F.lit(ms))


class BatchMerger:
    """Applies micro-batches from the ``kafka-segments`` source to the tables."""

    def __init__(
        self,
        spark: SparkSession,
        tables: Tables,
        config: CompactorConfig,
        clock: Clock,
        *,
        app_id: str = "segcompact",
    ) -> None:
        self.spark = spark
        self.tables = tables
        self.config = config
        self.clock = clock
        self.app_id = app_id
        self._young_may_hold: bool | None = None  # None: not looked yet

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.process(batch, batch_id)

    def process(self, batch: DataFrame, batch_id: int) -> None:
        """Apply one micro-batch.

        The batch is not cached whole: one pass decodes it and reduces it to one row per key
        (that key's winning non-transactional record, with the partition's numbers in partial
        sums), which is cached and is small. Lagged topics' young rows, and transactional
        records when there are any, take one more pass each.
        """
        now = self.clock.now_ms()
        starts = self._log_starts()
        reduced = self._reduce(batch, starts).persist()
        txn: _Transactions | None = None
        try:
            stats = self._partition_stats(reduced)
            if not stats:
                return
            topics = sorted({r["topic"] for r in stats})
            rules = {t: self.config.topic(t) for t in topics}
            held = sorted(t for t in topics if rules[t].min_compaction_lag_ms > 0)
            direct = sorted(t for t in topics if t not in held)
            records = batch.where(~F.col("segment_end"))
            winners = reduced.where(F.col("w").isNotNull()).select(
                "topic", "partition", "key", "w.*"
            )
            txn = self._read_committed(records, any(r["txn_records"] for r in stats))
            committed = None
            if txn is not None:
                committed = self._classify(self._above_log_start(txn.committed, starts), rules)
                _add_counts(stats, committed)
                committed = committed.where(F.col("key").isNotNull()).select(*_KEYED_COLUMNS)
            if direct:
                if committed is not None:
                    winners = winners.unionByName(committed.where(F.col("topic").isin(direct)))
                with idempotent_writes(self.spark, f"{self.app_id}-state", batch_id):
                    self._merge_state(winners, rules, now)
            if held:
                young = self._classify(
                    self._above_log_start(
                        records.where(
                            ~F.col("is_transactional")
                            & ~F.col("is_control")
                            & F.col("topic").isin(held)
                        ).select(*_CANDIDATE_COLUMNS),
                        starts,
                    ),
                    rules,
                ).where(F.col("key").isNotNull())
                young = young.select(*_KEYED_COLUMNS)
                if committed is not None:
                    young = young.unionByName(committed.where(F.col("topic").isin(held)))
                self.tables.young.append(young, app_id=f"{self.app_id}-young", version=batch_id)
                self._young_may_hold = True
            with idempotent_writes(self.spark, f"{self.app_id}-partitions", batch_id):
                self._merge_partitions(stats, now)
            if txn is not None:
                self.tables.pending.overwrite(
                    txn.pending, app_id=f"{self.app_id}-pending", version=batch_id
                )
        finally:
            reduced.unpersist()
            if txn is not None:
                txn.everything.unpersist()
        self.settle(now)

    def _partition_stats(self, reduced: DataFrame) -> list[dict[str, Any]]:
        """Per partition of the batch, from ``_reduce``'s partial sums: what the partitions table
        adds up, and the keyless and unreadable-version records among non-transactional ones."""
        rows = (
            reduced.groupBy("topic", "partition")
            .agg(
                (F.max("last_offset") + 1).alias("log_end_offset"),
                F.coalesce(F.sum("dirty_bytes"), F.lit(0)).cast("long").alias("dirty_bytes"),
                F.sum("segments").cast("long").alias("segments"),
                F.sum("records").cast("long").alias("records"),
                F.min("first_dirty_timestamp").alias("first_dirty_timestamp"),
                F.first("uncleanable_reason", ignorenulls=True).alias("uncleanable_reason"),
                F.max_by("compression", "last_data_offset").cast("int").alias("compression"),
                F.sum("txn_records").alias("txn_records"),
                F.sum("keyless_records").cast("long").alias("keyless_records"),
                F.sum("bad_version_headers").cast("long").alias("bad_version_headers"),
            )
            .collect()
        )
        return [r.asDict() for r in rows]

    def _log_starts(self) -> DataFrame:
        return self.tables.partitions.read(self.spark).select(
            "topic", "partition", "log_start_offset"
        )

    def _reduce(self, batch: DataFrame, starts: DataFrame) -> DataFrame:
        """One row per (topic, partition, key) of the batch: in ``w`` the key's winning record
        among the non-transactional ones above the log start of topics without a lag (null if
        none), and partial sums of the partition's numbers (see ``_partition_stats``). Rules are
        those of every configured topic, the defaults for the others."""
        topic = F.col("topic")
        configured, defaults = self.config.topics, self.config.defaults

        def per_topic(build: Callable[[TopicConfig], Column]) -> Column:
            return R.per_topic(topic, configured, build, default=defaults)

        data = ~F.col("segment_end") & ~F.col("is_control")
        rows = self._classify(
            batch.join(F.broadcast(starts), ["topic", "partition"], "left"), configured, defaults
        )
        plain = data & ~F.col("is_transactional") & _at_or_above_log_start()
        held = per_topic(lambda r: F.lit(r.min_compaction_lag_ms > 0))
        candidate = plain & F.col("key").isNotNull() & ~held
        rank = per_topic(
            lambda r: R.rank(F.col("offset"), F.col("timestamp"), F.col("order_value"), r)
        )
        winner = F.struct(*[F.col(c) for c in _KEYED_COLUMNS[3:]])
        return rows.groupBy("topic", "partition", "key").agg(
            F.max_by(F.when(candidate, winner), F.when(candidate, rank)).alias("w"),
            F.max("batch_last_offset").alias("last_offset"),
            F.sum("segment_bytes").alias("dirty_bytes"),
            F.count(F.when(F.col("segment_end"), 1)).alias("segments"),
            F.count(F.when(data, 1)).alias("records"),
            F.min(F.when(data, F.col("timestamp"))).alias("first_dirty_timestamp"),
            F.first(F.col("error"), ignorenulls=True).alias("uncleanable_reason"),
            F.max(F.when(data, F.col("offset"))).alias("last_data_offset"),
            F.max_by(F.when(data, F.col("compression")), F.when(data, F.col("offset"))).alias(
                "compression"
            ),
            # Transactional records and markers: without either, no pending record is decided.
            F.count(F.when(~F.col("segment_end") & F.col("is_transactional"), 1)).alias(
                "txn_records"
            ),
            F.count(F.when(plain & F.col("key").isNull(), 1)).alias("keyless_records"),
            F.count(F.when(plain & F.col("bad_version"), 1)).alias("bad_version_headers"),
        )

    def settle(self, now_ms: int) -> None:
        """What time alone changes: young records that have aged are compacted, then tombstones
        whose horizon has passed leave the state."""
        self.graduate(now_ms)
        self.expire(now_ms)

    def expire(self, now_ms: int) -> None:
        """KIP-534: tombstones whose delete horizon has passed leave the state table."""
        self.tables.state.delta(self.spark).delete(
            F.col("tombstone") & (F.col("delete_horizon") <= _ts(now_ms))
        )

    def graduate(self, now_ms: int) -> None:
        """Compact the young records that may be compacted now: per partition, those below the
        first segment that holds a record younger than ``min.compaction.lag.ms`` (Kafka's first
        uncleanable offset, ``rules.first_uncleanable_offset``)."""
        young = self.tables.young.read(self.spark)
        if self._young_may_hold is None:
            self._young_may_hold = not young.isEmpty()
        if not self._young_may_hold:
            return
        topics = [r.topic for r in young.select("topic").distinct().collect()]
        if not topics:
            return
        rules = {t: self.config.topic(t) for t in topics}
        too_young = R.per_topic(
            F.col("topic"), rules, lambda r: R.young(F.col("timestamp"), now_ms, r)
        )
        limits = [
            (r.topic, r.partition, LONG_MAX if r.boundary is None else r.boundary)
            for r in young.groupBy("topic", "partition")
            .agg(F.min(F.when(too_young, F.col("segment_base"))).alias("boundary"))
            .collect()
        ]
        bounds = self.spark.createDataFrame(limits, "topic string, partition int, boundary long")
        ripe = (
            young.join(F.broadcast(bounds), ["topic", "partition"])
            .where(F.col("offset") < F.col("boundary"))
            .drop("boundary")
        )
        if ripe.isEmpty():
            return
        self._merge_state(ripe, rules, now_ms)
        (
            self.tables.young.delta(self.spark)
            .alias("t")
            .merge(
                bounds.alias("b"),
                "t.topic = b.topic AND t.partition = b.partition AND t.offset < b.boundary",
            )
            .whenMatchedDelete()
            .execute()
        )

    # -- read-committed ---------------------------------------------------------------------

    def _read_committed(self, records: DataFrame, has_txn: bool) -> _Transactions | None:
        """Transactional records decided as committed, and the new pending table; None when
        the batch holds no transactional record or marker, as then nothing changes."""
        if not has_txn:
            return None
        txn = records.where(F.col("is_transactional"))
        old = self.tables.pending.read(self.spark)
        # The pending table's own columns, with each marker's decision computed.
        incoming = txn.withColumn(
            "commit", F.when(F.col("is_control"), F.col("key") == F.lit(_COMMIT_KEY))
        ).select(*PENDING_SCHEMA.fieldNames())
        everything = (
            old.unionByName(incoming)
            .dropDuplicates(["topic", "partition", "producer_id", "offset"])
            .persist()  # read for the state and the pending table: decode the batch once
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
        committed = decided.where(F.col("decision")).select(*_CANDIDATE_COLUMNS)
        still = decided.where(F.col("decision").isNull()).drop("decision")
        new_pending = everything.where("is_control").unionByName(still.select(*everything.columns))
        return _Transactions(everything, committed, new_pending)

    # -- compaction ------------------------------------------------------------------------

    def _above_log_start(self, candidates: DataFrame, starts: DataFrame) -> DataFrame:
        return (
            candidates.join(F.broadcast(starts), ["topic", "partition"], "left")
            .where(_at_or_above_log_start())
            .drop("log_start_offset")
        )

    def _classify(
        self,
        candidates: DataFrame,
        rules: Mapping[str, TopicConfig],
        default: TopicConfig | None = None,
    ) -> DataFrame:
        """Each record's header version, whether that header was unreadable, and whether the
        record is a tombstone, under its topic's rules (``default`` for a topic not in them)."""
        topic, headers = F.col("topic"), F.col("headers")

        def per_topic(build: Callable[[TopicConfig], Column]) -> Column:
            return R.per_topic(topic, rules, build, default=default)

        return (
            candidates.withColumn("order_value", per_topic(lambda r: R.version(headers, r)))
            .withColumn("bad_version", per_topic(lambda r: R.bad_version(headers, r)))
            .withColumn(
                "tombstone",
                per_topic(lambda r: R.tombstone(F.col("value"), headers, F.col("attributes"), r)),
            )
        )

    def _merge_state(self, records: DataFrame, rules: Mapping[str, TopicConfig], now: int) -> None:
        """Merge keyed, classified records into the state: per key, the winner under its
        topic's strategy, if it beats the state's row."""
        topic = F.col("topic")
        ranked = records.withColumn(
            "rank",
            R.per_topic(
                topic,
                rules,
                lambda r: R.rank(F.col("offset"), F.col("timestamp"), F.col("order_value"), r),
            ),
        )
        best = (
            ranked.groupBy("topic", "partition", "key")
            .agg(
                F.max_by(
                    F.struct(
                        *[
                            F.col(c)
                            for c in ranked.columns
                            if c not in ("topic", "partition", "key")
                        ]
                    ),
                    F.col("rank"),
                ).alias("w")
            )
            .select("topic", "partition", "key", "w.*")
        )
        retention_ms = R.per_topic(topic, rules, lambda r: F.lit(r.delete_retention_ms))
        source = best.select(
            "topic",
            "partition",
            "key",
            "offset",
            "timestamp",
            "timestampType",
            "value",
            "headers",
            "order_value",
            "tombstone",
            F.when(
                F.col("tombstone"),
                F.coalesce(F.col("delete_horizon"), F.timestamp_millis(retention_ms + F.lit(now))),
            ).alias("delete_horizon"),
            _ts(now).alias("cleaned_at"),
            "rank",
        )
        target_rank = R.per_topic(
            F.col("s.topic"),
            rules,
            lambda r: R.rank(F.col("t.offset"), F.col("t.timestamp"), F.col("t.order_value"), r),
        )
        values: dict[str, str | Column] = {c.name: F.col(f"s.{c.name}") for c in STATE_SCHEMA}
        (
            self.tables.state.delta(self.spark)
            .alias("t")
            .merge(
                source.alias("s"),
                "t.topic = s.topic AND t.partition = s.partition AND t.key = s.key",
            )
            .whenMatchedUpdate(condition=F.col("s.rank") > target_rank, set=values)
            .whenNotMatchedInsert(values=values)
            .execute()
        )

    def _merge_partitions(self, stats: list[dict[str, Any]], now: int) -> None:
        source = self.spark.createDataFrame(
            [tuple(r[name] for name in _STATS_SCHEMA.fieldNames()) for r in stats], _STATS_SCHEMA
        )
        t, s = "t.", "s."
        (
            self.tables.partitions.delta(self.spark)
            .alias("t")
            .merge(source.alias("s"), "t.topic = s.topic AND t.partition = s.partition")
            .whenMatchedUpdate(
                set={
                    "log_end_offset": F.greatest(
                        F.col(t + "log_end_offset"), F.col(s + "log_end_offset")
                    ),
                    "dirty_bytes": F.col(t + "dirty_bytes") + F.col(s + "dirty_bytes"),
                    "segments": F.col(t + "segments") + F.col(s + "segments"),
                    "records": F.col(t + "records") + F.col(s + "records"),
                    "keyless_records": F.col(t + "keyless_records") + F.col(s + "keyless_records"),
                    "bad_version_headers": F.col(t + "bad_version_headers")
                    + F.col(s + "bad_version_headers"),
                    "first_dirty_timestamp": F.least(
                        F.col(t + "first_dirty_timestamp"), F.col(s + "first_dirty_timestamp")
                    ),
                    "first_dirty_appended_at": F.coalesce(
                        F.col(t + "first_dirty_appended_at"), _ts(now)
                    ),
                    "uncleanable_reason": F.coalesce(
                        F.col(t + "uncleanable_reason"), F.col(s + "uncleanable_reason")
                    ),
                    "compression": F.coalesce(F.col(s + "compression"), F.col(t + "compression")),
                    "updated_at": _ts(now),
                }
            )
            .whenNotMatchedInsert(
                values={
                    "topic": F.col(s + "topic"),
                    "partition": F.col(s + "partition"),
                    "log_start_offset": F.lit(0).cast("long"),
                    "log_end_offset": F.col(s + "log_end_offset"),
                    "first_dirty_timestamp": F.col(s + "first_dirty_timestamp"),
                    "first_dirty_appended_at": _ts(now),
                    "dirty_bytes": F.col(s + "dirty_bytes"),
                    "clean_bytes": F.lit(0).cast("long"),
                    "segments": F.col(s + "segments"),
                    "records": F.col(s + "records"),
                    "keyless_records": F.col(s + "keyless_records"),
                    "bad_version_headers": F.col(s + "bad_version_headers"),
                    "compression": F.col(s + "compression"),
                    "last_materialized_at": F.lit(None).cast("timestamp"),
                    "materialized_version": F.lit(None).cast("long"),
                    "materialized_log_start": F.lit(None).cast("long"),
                    "output_next_horizon": F.lit(None).cast("timestamp"),
                    "uncleanable_reason": F.col(s + "uncleanable_reason"),
                    "updated_at": _ts(now),
                }
            )
            .execute()
        )
