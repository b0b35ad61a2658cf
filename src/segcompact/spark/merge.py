"""The foreachBatch step: one micro-batch of decoded records into the Delta tables.

Order of writes matters for crash safety: the state MERGE comes first, then the young table,
the partitions table and the pending-transactions table. Each write carries Delta's
idempotent-write pair (app id, batch id), so a batch replayed after a crash skips what it
already wrote and redoes the rest from the same inputs (the pending table it reads is rewritten
last).

The steps have homes of their own: read-committed filtering in ``read_committed``, the
partitions table's numbers in ``partitions``, a record's rank as a column expression in
``rules``, the tables in ``tables``. This module orders them and holds the state MERGE.

Topics with a ``min.compaction.lag.ms`` send their records to the young table instead of the
state; :meth:`BatchMerger.graduate` compacts them into the state once they may be compacted.
Graduation needs no idempotent-write id: merging a record into the state a second time changes
nothing, and its ledger rows are inserted only where missing, so a crash between its MERGE and
its DELETE is repaired by the next graduation.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.clock import Clock
from segcompact.config import LONG_MAX, CompactionStrategy, CompactorConfig, TopicConfig
from segcompact.delta.native import NativeReader
from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.errors import ConfigError
from segcompact.spark.frames import local_frame
from segcompact.spark.held import sized
from segcompact.spark.ledger import record_deletes, sla_topics
from segcompact.spark.partitions import (
    add_committed_counts,
    add_filed_counts,
    batch_stats,
    mark_erasure,
    merge_batch_stats,
)
from segcompact.spark.read_committed import Transactions, read_committed
from segcompact.spark.rules import per_topic, rank_by_topic, young
from segcompact.spark.scan import Kind, Scan, at_or_above_log_start, scan
from segcompact.spark.small_files import compact_small_files
from segcompact.spark.state_files import (
    FiledWinners,
    Filing,
    filing_location,
    remove_files,
    withdraw,
)
from segcompact.spark.table_reader import of_partitions, qualify
from segcompact.spark.tables import (
    SOURCE_AS_IS,
    STATE_SCHEMA,
    YOUNG_SCHEMA,
    Tables,
    idempotent_writes,
    session_settings,
    timestamp,
)
from segcompact.timing import timed

log = logging.getLogger(__name__)

# A committed transactional record's columns that compaction reads.
_CANDIDATE_COLUMNS = (
    "topic",
    "partition",
    "key",
    "value",
    "offset",
    "timestamp",
    "timestampType",
    "headers",
    "order_value",
    "bad_version",
    "tombstone",
    "delete_horizon",
    "segment_base",
)
# A classified keyed record: what the state and the young table are made from.
_KEYED_COLUMNS = tuple(YOUNG_SCHEMA.fieldNames())


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
        secret: bytes | None = None,
    ) -> None:
        self.spark = spark
        self.tables = tables
        self.config = config
        self.clock = clock
        self.app_id = app_id
        self.secret = secret  # the ledger's, for topics with gdpr.deletion.sla.ms
        self._young_may_hold: bool | None = None  # None: not looked yet
        # The last expiry's time: no tombstone whose horizon is at or before it is in the
        # state (what an erasure round may count as expired).
        self.expired_until: int | None = None
        self.last_stats: list[dict[str, Any]] = []  # the last batch's, per partition
        # Where a batch leaves its tasks its filing (``state_files``), beside the checkpoint.
        self.filing_at = filing_location(config.stream.checkpoint)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.process(batch, batch_id)

    def process(self, batch: DataFrame, batch_id: int) -> None:
        """Apply one micro-batch.

        One pass decodes the batch (the source reduces a partition's segments in their task)
        and keeps for the batch's later jobs (``spark.scan``) per row its kind, the record the
        merge needs of it if any (a winner, a young row, a transactional record or marker),
        and its share of the partition's numbers. Every later step reads those held rows: the
        source is decoded once.
        """
        if batch.rdd.getNumPartitions() == 0:
            return  # no segment: a new checkpoint's first batch (Spark runs it on nothing)
        now = self.clock.now_ms()
        known, starts = self._log_starts()
        filing = self._leave_filing(now, known)
        scanned = scan(batch, starts, self.config.topics, self.config.defaults)
        self.last_stats = []
        txn: Transactions | None = None
        read_back: list[FiledWinners] = []  # files whose rows the merge reads
        try:
            with timed(log, "decode and reduce"):
                stats = self._partition_stats(scanned.rows)
            filed = add_filed_counts(stats)
            self.last_stats = stats  # what the job's metrics count
            if not stats:
                return
            topics = {t: self.config.topic(t) for t in sorted({r["topic"] for r in stats})}
            lagged = sorted(t for t, c in topics.items() if c.min_compaction_lag_ms > 0)
            direct = sorted(t for t in topics if t not in lagged)
            winners = scanned.records(Kind.WINNER)
            # Without a transactional record or marker in the batch, nothing pending is decided.
            committed = None
            if any(r["txn_records"] for r in stats):
                with timed(log, "transactions"):
                    txn = self._read_committed(scanned)
                    committed = self._above_log_start(txn.committed, starts)
                    add_committed_counts(stats, committed)
                committed = committed.where(F.col("key").isNotNull()).select(*_KEYED_COLUMNS)
            if direct:
                if committed is not None:
                    winners = winners.unionByName(committed.where(F.col("topic").isin(direct)))
                pairs = [(r["topic"], r["partition"]) for r in stats if r["topic"] in direct]
                fresh = [tp for tp in pairs if tp not in known]
                with timed(log, "state files"):
                    if self._commit_files(filed, stats, fresh, committed is None, batch_id):
                        pairs, fresh = [tp for tp in pairs if tp not in fresh], []
                    elif filed:
                        read_back = filed
                        winners = winners.unionByName(self._filed_rows(read_back))
                # One candidate per key in every partition: the winners are the rows themselves.
                one_per_key = all(
                    r["one_per_key"] for r in stats if (r["topic"], r["partition"]) in pairs
                )
                self._merge_state(
                    winners,
                    topics,
                    now,
                    pairs,
                    state_write=(f"{self.app_id}-state", batch_id),
                    ledger_write=(f"{self.app_id}-ledger", batch_id),
                    one_per_key=one_per_key and committed is None,
                    fresh=fresh,
                    source_bytes={
                        (r["topic"], r["partition"]): r["candidate_bytes"] for r in stats
                    },
                )
                if filing is not None and read_back:
                    remove_files(filing, read_back, self.config.storage)
            if lagged:
                young = scanned.records(Kind.YOUNG)
                if committed is not None:
                    young = young.unionByName(committed.where(F.col("topic").isin(lagged)))
                with timed(log, "young append"):
                    self.tables.young.append(young, app_id=f"{self.app_id}-young", version=batch_id)
                self._young_may_hold = True
            with timed(log, "partitions MERGE"):
                self._merge_partitions(
                    stats,
                    now,
                    sorted(sla_topics(topics).keys() & direct),
                    write=(f"{self.app_id}-partitions", batch_id),
                    new=not known & {(r["topic"], r["partition"]) for r in stats},
                )
            if txn is not None:
                with timed(log, "pending write"):
                    self.tables.pending.overwrite(
                        txn.pending, app_id=f"{self.app_id}-pending", version=batch_id
                    )
        finally:
            try:
                scanned.release()
            finally:
                if txn is not None:
                    txn.release()
                if filing is not None:
                    withdraw(self.filing_at, self.config.storage)
        with timed(log, "settle"):
            self.settle(now)

    def _leave_filing(self, now: int, known: set[tuple[str, int]]) -> Filing | None:
        """Leave the batch's filing for its tasks, where delta-rs commits to the state: the
        winners of a partition the state does not hold then come as its own files
        (``state_files``). None where it does not (and none is left: one an earlier run left
        would name another state)."""
        read = self.tables.state.reader(self.spark)
        if not isinstance(read, NativeReader):
            withdraw(self.filing_at, self.config.storage)
            return None

        def retention(c: TopicConfig) -> int | None:
            filed = (
                c.min_compaction_lag_ms == 0
                and c.gdpr_deletion_sla_ms is None
                and c.compaction_strategy is CompactionStrategy.OFFSET
            )
            return c.delete_retention_ms if filed else None

        filing = Filing(
            now,
            read.location,
            frozenset(known),
            {t: retention(c) for t, c in self.config.topics.items()},
            retention(self.config.defaults),
        )
        filing.publish(self.filing_at, self.config.storage)
        return filing

    def _commit_files(
        self,
        files: list[FiledWinners],
        stats: list[dict[str, Any]],
        fresh: Collection[tuple[str, int]],
        decided: bool,
        batch_id: int,
    ) -> bool:
        """Commit the files the tasks wrote, by delta-rs, as the batch's one write of the
        partitions the state held nothing of (``fresh``): under the idempotent-write pair of
        the append it replaces, so that a replayed batch writes them once, by either engine.
        Only where they hold those partitions' winners, whole: each partition in one file, its
        records one per key, ``decided`` (no transaction in the batch adds a record), or in no
        file with no winner. Whether it did (else the merge reads the files' rows)."""
        by_partition = {(r["topic"], r["partition"]): r for r in stats}
        held = Counter((f.topic, p.partition) for f in files for p in f.partitions)

        def whole(tp: tuple[str, int]) -> bool:
            if held[tp]:
                return held[tp] == 1 and bool(by_partition[tp]["one_per_key"])
            return not by_partition[tp]["candidate_bytes"]

        if not files or not decided or not all(whole(tp) for tp in fresh):
            return False
        write = (f"{self.app_id}-state-new", batch_id)  # the append's
        return self.tables.state.add_files(self.spark, [f.data_file() for f in files], write)

    def _filed_rows(self, files: list[FiledWinners]) -> DataFrame:
        """The winners ``files`` hold, as the batch's winner rows."""
        root = qualify(self.spark, self.tables.state.name).rstrip("/")
        schema = T.StructType([f for f in STATE_SCHEMA if f.name != "topic"])
        frames = [
            self.spark.read.schema(schema)
            .parquet(*(f"{root}/{f.path}" for f in files if f.topic == topic))
            .withColumn("topic", F.lit(topic))
            for topic in sorted({f.topic for f in files})
        ]
        rows = functools.reduce(DataFrame.unionByName, frames)
        return rows.select(
            *(c if c in rows.columns else F.lit(None).cast("long").alias(c) for c in _KEYED_COLUMNS)
        )

    # The steps of a batch, as methods so that the benchmark can time each.

    def _partition_stats(self, scanned: DataFrame) -> list[dict[str, Any]]:
        return batch_stats(scanned)

    def _read_committed(self, scanned: Scan) -> Transactions:
        return read_committed(
            self.spark, self.tables.pending, scanned.transactional(), _CANDIDATE_COLUMNS
        )

    def _merge_partitions(
        self,
        stats: list[dict[str, Any]],
        now: int,
        erased: list[str],
        *,
        write: tuple[str, int],
        new: bool,
    ) -> None:
        merge_batch_stats(
            self.spark, self.tables.partitions, stats, now, erased, write=write, new=new
        )

    def _log_starts(self) -> tuple[set[tuple[str, int]], DataFrame]:
        """The partitions the partitions table holds (the state holds rows of no other: a batch
        writes the state first, and a replayed batch skips what it wrote), and their log
        starts, read now into a small local DataFrame: by delta-rs where it can, as planning a
        Delta scan of the table costs seconds of Spark jobs in a fresh JVM."""
        rows = self.tables.partitions.reader(self.spark).arrow(
            columns=["topic", "partition", "log_start_offset"]
        )
        columns = [rows.column(name).to_pylist() for name in rows.column_names]
        starts = list(zip(*columns, strict=True))
        known = {(topic, partition) for topic, partition, _ in starts}
        return known, local_frame(
            self.spark, starts, "topic string, partition int, log_start_offset long"
        )

    def settle(self, now_ms: int) -> None:
        """What time alone changes: young records that have aged are compacted, then tombstones
        whose horizon has passed leave the state."""
        self.graduate(now_ms)
        self.expire(now_ms)

    def expire(self, now_ms: int) -> None:
        """KIP-534: tombstones whose delete horizon has passed leave the state table (no
        DELETE, seconds of Spark job, while the files' statistics say none has)."""
        if self.tables.state.reader(self.spark).may_hold_until("delete_horizon", now_ms):
            self.tables.state.delta(self.spark).delete(
                F.col("tombstone") & (F.col("delete_horizon") <= timestamp(now_ms))
            )
        self.expired_until = now_ms

    def graduate(self, now_ms: int) -> None:
        """Compact the young records that may be compacted now: per partition, those below the
        first segment that holds a record younger than ``min.compaction.lag.ms`` (Kafka's first
        uncleanable offset; the tests' model computes it record by record)."""
        if self._young_may_hold is None:
            self._young_may_hold = self.tables.young.reader(self.spark).may_hold_rows()
        if not self._young_may_hold:
            return
        waiting = self.tables.young.read(self.spark)
        too_young = per_topic(
            F.col("topic"),
            self.config.topics,
            lambda c: young(F.col("timestamp"), now_ms, c),
            default=self.config.defaults,
        )
        # One Spark job: each partition's boundary, and whether a record is below it.
        found = (
            waiting.groupBy("topic", "partition")
            .agg(
                F.min(F.when(too_young, F.col("segment_base"))).alias("boundary"),
                F.min("offset").alias("first"),
            )
            .collect()
        )
        limits = [
            (r.topic, r.partition, LONG_MAX if r.boundary is None else r.boundary) for r in found
        ]
        if all(r.first >= boundary for r, (_, _, boundary) in zip(found, limits, strict=True)):
            return  # nothing ripe (or no row at all)
        topics = {t: self.config.topic(t) for t in sorted({r.topic for r in found})}
        bounds = local_frame(self.spark, limits, "topic string, partition int, boundary long")
        ripe = (
            waiting.join(F.broadcast(bounds), ["topic", "partition"])
            .where(F.col("offset") < F.col("boundary"))
            .drop("boundary")
        )
        self._merge_state(
            ripe,
            topics,
            now_ms,
            [(r[0], r[1]) for r in limits],
            state_write=None,
            ledger_write=None,
        )
        erased = sorted(sla_topics(topics))
        if erased:
            mark_erasure(
                self.spark,
                self.tables.partitions,
                ripe.where(F.col("topic").isin(erased))
                .groupBy("topic", "partition")
                .agg(F.min("timestamp").alias("appended_at")),
                now_ms,
            )
        with session_settings(self.spark, SOURCE_AS_IS):  # local rows: nothing to copy
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

    # -- compaction ------------------------------------------------------------------------

    def _above_log_start(self, candidates: DataFrame, starts: DataFrame) -> DataFrame:
        return (
            candidates.join(F.broadcast(starts), ["topic", "partition"], "left")
            .where(at_or_above_log_start())
            .drop("log_start_offset")
        )

    def _merge_state(
        self,
        records: DataFrame,
        topics: Mapping[str, TopicConfig],
        now: int,
        partitions: Collection[tuple[str, int]],
        *,
        state_write: tuple[str, int] | None,
        ledger_write: tuple[str, int] | None,
        one_per_key: bool = False,
        fresh: Collection[tuple[str, int]] = (),
        source_bytes: Mapping[tuple[str, int], int] | None = None,
    ) -> None:
        """Merge keyed, classified records of ``partitions`` into the state: per key, the
        winner under its topic's strategy (``one_per_key``: the records are winners already),
        if it beats the state's row (once per idempotent-write pair ``state_write``, if any:
        merging graduated records twice changes nothing). Only the target files of
        ``partitions`` are read. The tombstones of topics with a deletion SLA get a ledger row
        each, written once: under the pair ``ledger_write`` for a batch, whose records were seen
        now; None for graduated ones (``ledger.record_deletes``). The winners of ``fresh``
        partitions, which the state holds no row of, are appended (with ``state_write``): a
        MERGE into nothing costs a join for no match. ``source_bytes``: per partition, about
        what a join would broadcast of its records, which decides whether the MERGE broadcasts
        them when they come from the batch's held rows (``held.sized``; None: from a Delta
        scan, which Delta sizes)."""
        topic = F.col("topic")
        best = records.withColumn("rank", rank_by_topic(topic, topics))
        if not one_per_key:
            fields = [F.col(c) for c in best.columns if c not in ("topic", "partition", "key")]
            # Shuffled by key first, the rows are sorted once (no partial aggregate before the
            # shuffle sorting every row for nothing).
            best = (
                best.repartition("topic", "partition", "key")
                .groupBy("topic", "partition", "key")
                .agg(F.max_by(F.struct(*fields), F.col("rank")).alias("winner"))
                .select("topic", "partition", "key", "winner.*")
            )
        retention_ms = per_topic(topic, topics, lambda c: F.lit(c.delete_retention_ms))
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
            timestamp(now).alias("cleaned_at"),
            "rank",
        )
        merged, appended = source, [tp for tp in partitions if tp in fresh]
        if appended and state_write is not None:
            app_id, version = state_write
            rows = source.where(of_partitions(appended)).select(*STATE_SCHEMA.fieldNames())
            if not one_per_key:
                # One file per partition, as a MERGE writes it (a partition's winners were in
                # one task already if its segments were reduced together).
                rows = rows.repartition("topic", "partition")
            with timed(log, "state append"):
                self.tables.state.append(rows, app_id=f"{app_id}-new", version=version)
            partitions = [tp for tp in partitions if tp not in fresh]
            merged = source.where(~of_partitions(appended))
        if source_bytes is not None:
            merged = sized(merged, sum(source_bytes.get(tp, 0) for tp in partitions))
        target_rank = rank_by_topic(F.col("s.topic"), topics, table="t.")
        values: dict[str, str | Column] = {c.name: F.col(f"s.{c.name}") for c in STATE_SCHEMA}
        if partitions:
            with (
                timed(log, "state MERGE"),
                idempotent_writes(self.spark, state_write),
                # Graduation's source is a Delta scan, which Delta does not copy either.
                session_settings(self.spark, SOURCE_AS_IS),
            ):
                (
                    self.tables.state.delta(self.spark)
                    .alias("t")
                    .merge(
                        merged.alias("s"),
                        of_partitions(partitions, "t.")
                        & (F.col("t.topic") == F.col("s.topic"))
                        & (F.col("t.partition") == F.col("s.partition"))
                        & (F.col("t.key") == F.col("s.key")),
                    )
                    .whenMatchedUpdate(condition=F.col("s.rank") > target_rank, set=values)
                    .whenNotMatchedInsert(values=values)
                    .execute()
                )
            compact_small_files(self.spark, self.tables.state, partitions)
        erased = sla_topics(topics)
        if not erased:
            return
        tombstones = source.where(F.col("tombstone") & F.col("topic").isin(sorted(erased)))
        with timed(log, "tombstones?"):
            if tombstones.isEmpty():
                return
        if self.secret is None:
            raise ConfigError(f"{SECRET_VARIABLE} is needed for gdpr.deletion.sla.ms")
        with timed(log, "ledger write"):
            record_deletes(
                self.spark,
                self.tables.ledger,
                tombstones,
                erased,
                self.secret,
                state_version=self.tables.state.reader(self.spark).version(),
                now=now,
                batch=ledger_write,
            )
