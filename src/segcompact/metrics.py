"""The job's metrics for Prometheus, named after Kafka's log cleaner where they mean the same.

Served on ``http://<[metrics] host>:<[metrics] port>/metrics`` by the job's own process. Three
sources: each micro-batch (records and bytes read, its duration: :meth:`JobMetrics.batch`), the
streaming query's listener (:class:`segcompact.spark.listener.QueryListener`: whether the query
is active, its last trigger), and the tables after a batch or an upkeep (:meth:`refresh`: what
``segcompact status`` and ``segcompact sla`` show, read by delta-rs). Labels are topic and
partition, or the kind of an erasure, at most: no key, hashed or not, is ever a label.

A gauge is absent until what it reports has been seen (the tables read, a batch run, a
materialisation done, a trigger reported), never 0 for "not yet": an alert on a deletion SLA is
not silenced by a restart. ``segcompact_metrics_ready`` is always there: 0 until the tables were
read and after a read of them failed (their gauges absent again), 1 while the last read worked.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from segcompact.config import CompactorConfig
from segcompact.delta.sql import SparkViews, open_sql
from segcompact.erasure.ledger_reads import ledger_rows, ledger_views
from segcompact.erasure.report import KINDS, build, by_kind
from segcompact.erasure.schedule import Status
from segcompact.erasure.unread import BACKLOG, BREACHED, UnreadPartition
from segcompact.status import partition_status, status_views
from segcompact.unmerged import judged

PARTITION = ("topic", "partition")
TOPIC = ("topic",)
KIND = ("kind",)  # an erasure's: erasure.report.KINDS
UNREAD_KIND = "unread"  # deletions_breached's kind for unread source data past its deadline
RECENT_BATCHES = 10  # max-clean-time-secs: the longest of the last ones, as Kafka's cleaner
REFRESH_S = 10.0  # the tables are read again after a batch or upkeep at most this often


class Known(Collector):
    """Metrics exported only once :attr:`known`: before, their families are absent from a
    scrape (their names are still described, so none can be registered twice)."""

    def __init__(self, metrics: Iterable[MetricWrapperBase]) -> None:
        self._metrics = tuple(metrics)
        self.known = False

    def collect(self) -> Iterable[Metric]:
        return [f for m in self._metrics for f in m.collect()] if self.known else []

    def describe(self) -> Iterable[Metric]:
        return [f for m in self._metrics for f in m.describe()]


class JobMetrics:
    """One job's gauges and counters, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # Gauges are registered through a Known each (below), by what they report: absent
        # until it is seen. The counters, the query's state and readiness are true from the
        # start (nothing read yet, not active yet, not ready).
        reg = self.registry
        # Kafka's LogCleanerManager and LogCleaner names.
        self.max_delay = Gauge(
            "segcompact_max_compaction_delay_secs",
            "Kafka's max-compaction-delay-secs: how far the most overdue partition is past "
            "max.compaction.lag.ms",
            registry=None,
        )
        self.max_clean_time = Gauge(
            "segcompact_max_clean_time_secs",
            f"Kafka's max-clean-time-secs: the longest of the last {RECENT_BATCHES} micro-batches",
            registry=None,
        )
        self.uncleanable_count = Gauge(
            "segcompact_uncleanable_partitions_count",
            "Kafka's uncleanable-partitions-count: partitions a damaged segment stopped",
            registry=None,
        )
        self.uncleanable_bytes = Gauge(
            "segcompact_uncleanable_bytes",
            "Kafka's uncleanable-bytes: the bytes of the uncleanable partitions' logs",
            registry=None,
        )
        self.recopy = Gauge(
            "segcompact_cleaner_recopy_percent",
            "Kafka's cleaner-recopy-percent: bytes the last materialisation wrote, in percent of "
            "the bytes of the logs it replaced (last versions and dirty segments)",
            registry=None,
        )
        # Per partition.
        self.delay = Gauge(
            "segcompact_partition_compaction_delay_secs",
            "max-compaction-delay-secs of one partition",
            PARTITION,
            registry=None,
        )
        self.dirty_ratio = Gauge(
            "segcompact_dirty_ratio",
            "dirty bytes / all bytes of a partition",
            PARTITION,
            registry=None,
        )
        self.dirty_bytes = Gauge(
            "segcompact_dirty_bytes",
            "bytes read since the last materialisation",
            PARTITION,
            registry=None,
        )
        self.tombstones = Gauge(
            "segcompact_tombstones_pending",
            "tombstones in the state, waiting for their delete horizon",
            PARTITION,
            registry=None,
        )
        self.young = Gauge(
            "segcompact_young_records",
            "records kept raw: younger than min.compaction.lag.ms, or after one that is",
            PARTITION,
            registry=None,
        )
        self.materialized_age = Gauge(
            "segcompact_last_materialization_age_secs",
            "seconds since the partition's output was last written",
            PARTITION,
            registry=None,
        )
        self.uncleanable = Gauge(
            "segcompact_uncleanable",
            "1 when a damaged segment stopped the partition",
            PARTITION,
            registry=None,
        )
        # The micro-batches.
        self.records = Counter(
            "segcompact_records_read", "data records read from segments", registry=reg
        )
        self.bytes = Counter("segcompact_bytes_read", "bytes of segments read", registry=reg)
        self.batches = Counter("segcompact_batches", "micro-batches merged", registry=reg)
        self.batch_seconds = Gauge(
            "segcompact_batch_duration_secs", "the last micro-batch's duration", registry=None
        )
        self.since_last_run = Gauge(
            "segcompact_time_since_last_run_ms",
            "Kafka's time-since-last-run-ms: milliseconds since the last micro-batch ended",
            registry=None,
        )
        # The streaming query (the listener).
        self.query_active = Gauge(
            "segcompact_query_active", "1 while the streaming query runs", registry=reg
        )
        self.trigger_seconds = Gauge(
            "segcompact_trigger_duration_secs",
            "the last trigger's duration, as the query's progress reports it",
            registry=None,
        )
        self.input_rows = Gauge(
            "segcompact_trigger_input_rows",
            "rows the source gave the last trigger (after the in-task reduction)",
            registry=None,
        )
        # The deletion SLA, counted as ``segcompact sla`` counts it.
        self.deletions_pending = Gauge(
            "segcompact_deletions_pending",
            "erasures not yet done everywhere and not yet past their deadline, as sla counts "
            "them: kind delete (a deleted key) or overwrite (a round of overwritten values)",
            KIND,
            registry=None,
        )
        self.deletions_breached = Gauge(
            "segcompact_deletions_breached",
            "erasures that missed gdpr.deletion.sla.ms, as sla counts them, by kind; "
            f"kind={UNREAD_KIND}: partitions whose source data not merged is past it",
            KIND,
            registry=None,
        )
        self.oldest_pending = Gauge(
            "segcompact_oldest_pending_deletion_age_secs",
            "age of the oldest pending erasure of the kind, from its append (0: none pending)",
            KIND,
            registry=None,
        )
        # Source data not merged yet, of topics with a deletion SLA (erasure.unread).
        self.unverified = Gauge(
            "segcompact_unverified_partitions",
            "partitions of an SLA topic whose source data not merged is a quarter of "
            "gdpr.deletion.sla.ms old or older (or of no readable age): their erasures cannot "
            "be shown; past the SLA they are breaches (segcompact sla, health)",
            TOPIC,
            registry=None,
        )
        self.oldest_unread = Gauge(
            "segcompact_oldest_unread_age_secs",
            "age of an SLA topic's oldest source data not merged, from its append (0: none)",
            TOPIC,
            registry=None,
        )
        self.ready = Gauge(
            "segcompact_metrics_ready",
            "1 while the job's last read of its tables worked; 0 before the first and after a "
            "failed one, when the gauges read from them are absent",
            registry=reg,
        )
        self._tables = Known(
            (
                self.max_delay,
                self.uncleanable_count,
                self.uncleanable_bytes,
                self.delay,
                self.dirty_ratio,
                self.dirty_bytes,
                self.tombstones,
                self.young,
                self.materialized_age,
                self.uncleanable,
                self.deletions_pending,
                self.deletions_breached,
                self.oldest_pending,
                self.unverified,
                self.oldest_unread,
            )
        )
        self._batches = Known((self.max_clean_time, self.batch_seconds, self.since_last_run))
        self._materialized = Known((self.recopy,))
        self._triggers = Known((self.trigger_seconds, self.input_rows))
        for known in (self._tables, self._batches, self._materialized, self._triggers):
            reg.register(known)
        self._ended: float | None = None  # when the last micro-batch ended (time.monotonic)
        self.since_last_run.set_function(self._since_last_run)
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
        self._ended = time.monotonic()
        self._batches.known = True

    def _since_last_run(self) -> float:
        return 0.0 if self._ended is None else (time.monotonic() - self._ended) * 1000

    def materialized(self, written: int, read: int) -> None:
        """A materialisation wrote ``written`` bytes in place of ``read`` bytes of log."""
        self.recopy.set(100 * written / max(read, 1))
        self._materialized.known = True

    def trigger(self, seconds: float, input_rows: int) -> None:
        """The streaming query's progress: its last trigger's duration and input rows."""
        self.trigger_seconds.set(seconds)
        self.input_rows.set(input_rows)
        self._triggers.known = True

    def refresh(
        self,
        config: CompactorConfig,
        now_ms: int,
        spark: SparkViews,
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
            try:
                self._read(config, now_ms, spark)
            except BaseException:
                # Figures of an earlier read are not current: absent, as before the first.
                self._tables.known = False
                self.ready.set(0)
                raise

    def _read(self, config: CompactorConfig, now_ms: int, spark: SparkViews) -> None:
        views = {**status_views(config), **ledger_views(config)}
        sql = open_sql(views, config.storage, spark)  # one set of tables for both reads
        deletes, rounds = ledger_rows(sql)
        unread = judged(config, sql, now_ms)
        report = build(deletes, rounds, config.sla_ms, now_ms, unread=unread)
        rows = partition_status(sql, config, now_ms)
        sla_topics = {str(r["topic"]) for r in rows if config.sla_ms(str(r["topic"])) is not None}
        self.tables(rows, report, now_ms, unread, sla_topics)

    def tables(
        self,
        rows: Sequence[dict[str, Any]],
        report: dict[str, Any],
        now_ms: int,
        unread: Sequence[UnreadPartition] = (),
        sla_topics: Iterable[str] = (),
    ) -> None:
        """Set the table gauges from ``status`` rows, the SLA report (``erasure.report``'s
        :func:`build` of the ledger's rows) and the partitions with source data not merged
        (``erasure.unread``'s :func:`judge`; every topic of ``sla_topics`` and of ``unread``
        gets a series); the gauges are exported from now on."""
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
        pending = by_kind(report, Status.PENDING)
        missed = by_kind(report, Status.BREACHED)
        for kind in KINDS:
            self.deletions_pending.labels(kind).set(len(pending[kind]))
            self.deletions_breached.labels(kind).set(len(missed[kind]))
            appended = [_epoch_ms(_appended(r)) for r in pending[kind]]
            self.oldest_pending.labels(kind).set((now_ms - min(appended)) / 1000 if appended else 0)
        # As health counts breaches: partitions whose unread source data is past its deadline.
        late = sum(1 for u in unread if u.status == BREACHED)
        self.deletions_breached.labels(UNREAD_KIND).set(late)
        self.unverified.clear()
        self.oldest_unread.clear()
        for topic in sorted({*sla_topics, *(u.topic for u in unread)}):
            mine = [u for u in unread if u.topic == topic]
            self.unverified.labels(topic).set(sum(1 for u in mine if u.status != BACKLOG))
            since = [u.since_ms for u in mine if u.since_ms is not None]
            if since or not mine:  # data of no readable age has no age to show: absent
                self.oldest_unread.labels(topic).set((now_ms - min(since)) / 1000 if since else 0)
        self._tables.known = True
        self.ready.set(1)


def _appended(row: Mapping[str, Any]) -> str:
    """When a report's row was appended: a deletion's tombstone, a round's first value."""
    return str(row["appended_at"] if "appended_at" in row else row["appended_from"])


def _epoch_ms(iso: str) -> int:
    """The report's ISO-8601 time (millisecond precision, ``Z``) in epoch milliseconds."""
    return round(datetime.fromisoformat(iso).timestamp() * 1000)
