"""The job's metrics for Prometheus, named after Kafka's log cleaner where they mean the same.

Served on ``http://<[metrics] host>:<[metrics] port>/metrics`` by the job's own process. Three
sources: each micro-batch (records and bytes read, its duration: :meth:`JobMetrics.batch`), the
streaming query's listener (:class:`segcompact.spark.listener.QueryListener`: whether the query
is active, its last trigger), and the tables after a batch or an upkeep (:meth:`refresh`: what
``segcompact status`` and ``segcompact sla`` show, read by delta-rs). Labels are topic and
partition at most: no key, hashed or not, is ever a label.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from segcompact.config import CompactorConfig
from segcompact.erasure.ledger_reads import ledger_rows, ledger_views
from segcompact.erasure.report import breached, build
from segcompact.erasure.schedule import Status
from segcompact.status import partition_status, status_views
from segcompact.table_sql import open_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PARTITION = ("topic", "partition")
RECENT_BATCHES = 10  # max-clean-time-secs: the longest of the last ones, as Kafka's cleaner
REFRESH_S = 10.0  # the tables are read again after a batch or upkeep at most this often


class JobMetrics:
    """One job's gauges and counters, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        # Kafka's LogCleanerManager and LogCleaner names.
        self.max_delay = Gauge(
            "segcompact_max_compaction_delay_secs",
            "Kafka's max-compaction-delay-secs: how far the most overdue partition is past "
            "max.compaction.lag.ms",
            registry=r,
        )
        self.max_clean_time = Gauge(
            "segcompact_max_clean_time_secs",
            f"Kafka's max-clean-time-secs: the longest of the last {RECENT_BATCHES} micro-batches",
            registry=r,
        )
        self.uncleanable_count = Gauge(
            "segcompact_uncleanable_partitions_count",
            "Kafka's uncleanable-partitions-count: partitions a damaged segment stopped",
            registry=r,
        )
        self.uncleanable_bytes = Gauge(
            "segcompact_uncleanable_bytes",
            "Kafka's uncleanable-bytes: the bytes of the uncleanable partitions' logs",
            registry=r,
        )
        self.recopy = Gauge(
            "segcompact_cleaner_recopy_percent",
            "Kafka's cleaner-recopy-percent: bytes the last materialisation wrote, in percent of "
            "the bytes of the logs it replaced (last versions and dirty segments)",
            registry=r,
        )
        # Per partition.
        self.delay = Gauge(
            "segcompact_partition_compaction_delay_secs",
            "max-compaction-delay-secs of one partition",
            PARTITION,
            registry=r,
        )
        self.dirty_ratio = Gauge(
            "segcompact_dirty_ratio",
            "dirty bytes / all bytes of a partition",
            PARTITION,
            registry=r,
        )
        self.dirty_bytes = Gauge(
            "segcompact_dirty_bytes",
            "bytes read since the last materialisation",
            PARTITION,
            registry=r,
        )
        self.tombstones = Gauge(
            "segcompact_tombstones_pending",
            "tombstones in the state, waiting for their delete horizon",
            PARTITION,
            registry=r,
        )
        self.young = Gauge(
            "segcompact_young_records",
            "records kept raw: younger than min.compaction.lag.ms, or after one that is",
            PARTITION,
            registry=r,
        )
        self.materialized_age = Gauge(
            "segcompact_last_materialization_age_secs",
            "seconds since the partition's output was last written",
            PARTITION,
            registry=r,
        )
        self.uncleanable = Gauge(
            "segcompact_uncleanable",
            "1 when a damaged segment stopped the partition",
            PARTITION,
            registry=r,
        )
        # The micro-batches.
        self.records = Counter(
            "segcompact_records_read", "data records read from segments", registry=r
        )
        self.bytes = Counter("segcompact_bytes_read", "bytes of segments read", registry=r)
        self.batches = Counter("segcompact_batches", "micro-batches merged", registry=r)
        self.batch_seconds = Gauge(
            "segcompact_batch_duration_secs", "the last micro-batch's duration", registry=r
        )
        # The streaming query (the listener).
        self.query_active = Gauge(
            "segcompact_query_active", "1 while the streaming query runs", registry=r
        )
        self.trigger_seconds = Gauge(
            "segcompact_trigger_duration_secs",
            "the last trigger's duration, as the query's progress reports it",
            registry=r,
        )
        self.input_rows = Gauge(
            "segcompact_trigger_input_rows",
            "rows the source gave the last trigger (after the in-task reduction)",
            registry=r,
        )
        # The deletion SLA.
        self.deletions_pending = Gauge(
            "segcompact_deletions_pending", "deletions not yet erased everywhere", registry=r
        )
        self.deletions_breached = Gauge(
            "segcompact_deletions_breached",
            "deletions and erasure rounds that missed gdpr.deletion.sla.ms",
            registry=r,
        )
        self.oldest_pending = Gauge(
            "segcompact_oldest_pending_deletion_age_secs",
            "age of the oldest deletion not yet erased (0: none)",
            registry=r,
        )
        self._recent: collections.deque[float] = collections.deque(maxlen=RECENT_BATCHES)
        self._refreshed = -float("inf")
        self.stale = False  # a refresh was skipped: the tables changed since they were read
        self._lock = threading.Lock()

    def serve(self, host: str, port: int) -> None:
        """Serve ``/metrics`` from a daemon thread of this process."""
        start_http_server(port, addr=host, registry=self.registry)

    def batch(self, seconds: float, stats: Sequence[dict[str, Any]]) -> None:
        """A merged micro-batch: its duration and what it read (``merge`` batch stats)."""
        self.batches.inc()
        self.batch_seconds.set(seconds)
        self._recent.append(seconds)
        self.max_clean_time.set(max(self._recent))
        self.records.inc(sum(r["records"] or 0 for r in stats))
        self.bytes.inc(sum(r["dirty_bytes"] or 0 for r in stats))

    def materialized(self, written: int, read: int) -> None:
        """A materialisation wrote ``written`` bytes in place of ``read`` bytes of log."""
        self.recopy.set(100 * written / max(read, 1))

    def refresh(
        self,
        config: CompactorConfig,
        now_ms: int,
        spark: Callable[[], SparkSession],
        *,
        force: bool = False,
    ) -> None:
        """The tables' figures again, unless read less than :data:`REFRESH_S` ago: then they
        are :attr:`stale` until a later call reads them."""
        with self._lock:
            if not force and time.monotonic() - self._refreshed < REFRESH_S:
                self.stale = True
                return
            self._refreshed = time.monotonic()
            self.stale = False
            self._read(config, now_ms, spark)

    def _read(
        self, config: CompactorConfig, now_ms: int, spark: Callable[[], SparkSession]
    ) -> None:
        views = {**status_views(config), **ledger_views(config)}
        sql = open_sql(views, config.storage, spark)  # one set of tables for both reads
        deletes, rounds = ledger_rows(sql)
        report = build(deletes, rounds, config.sla_ms, now_ms)
        self.tables(partition_status(sql, config, now_ms), deletes, report, now_ms)

    def tables(
        self,
        rows: Sequence[dict[str, Any]],
        deletes: Sequence[dict[str, Any]],
        report: dict[str, Any],
        now_ms: int,
    ) -> None:
        """Set the table gauges from ``status`` rows, the ledger's delete rows and the SLA
        report built from them."""
        for gauge in (
            self.delay,
            self.dirty_ratio,
            self.dirty_bytes,
            self.tombstones,
            self.young,
            self.materialized_age,
            self.uncleanable,
        ):
            gauge.clear()  # a partition gone from the table leaves no stale series
        for r in rows:
            tp = (r["topic"], str(r["partition"]))
            self.delay.labels(*tp).set(r["max_compaction_delay_ms"] / 1000)
            self.dirty_ratio.labels(*tp).set(r["dirty_ratio"])
            self.dirty_bytes.labels(*tp).set(r["dirty_bytes"])
            self.tombstones.labels(*tp).set(r["tombstones_pending"])
            self.young.labels(*tp).set(r["young_records"])
            self.uncleanable.labels(*tp).set(1 if r["uncleanable"] is not None else 0)
            if r["last_materialized_ms"] is not None:
                self.materialized_age.labels(*tp).set((now_ms - r["last_materialized_ms"]) / 1000)
        self.max_delay.set(max((r["max_compaction_delay_ms"] for r in rows), default=0) / 1000)
        stopped = [r for r in rows if r["uncleanable"] is not None]
        self.uncleanable_count.set(len(stopped))
        self.uncleanable_bytes.set(sum(r["dirty_bytes"] + r["clean_bytes"] for r in stopped))
        pending = [
            raw["appended_at"]
            for raw, shown in zip(deletes, report["deletions"], strict=True)
            if shown["status"] == Status.PENDING
        ]
        self.deletions_pending.set(len(pending))
        self.deletions_breached.set(len(breached(report)))
        self.oldest_pending.set(0 if not pending else (now_ms - min(pending)) / 1000)
