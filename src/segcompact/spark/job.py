"""The streaming job: the ``kafka-segments`` source into ``BatchMerger`` under a trigger.

One code path for the three deployments: the CLI (embedded), ``spark-submit`` and Databricks
call :func:`start_query` with a session and a loaded config.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from types import FrameType
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from segcompact.backlog import Backlog, QueryLog, manifest_dir, query_dir
from segcompact.clock import Clock, job_clock
from segcompact.compaction.rules import Rankings
from segcompact.config import CompactorConfig
from segcompact.delta.sql import DeltaSql, NoTable
from segcompact.erasure.keyhash import job_secret
from segcompact.errors import SegcompactError, root_cause
from segcompact.manifest import Manifest
from segcompact.metrics import JobMetrics
from segcompact.run_summary import RunSummary
from segcompact.spark.compat import once_trigger
from segcompact.spark.conflicts import retry_conflicts
from segcompact.spark.erasure import Eraser, RoundReport
from segcompact.spark.listener import QueryListener
from segcompact.spark.materialize import Materializer
from segcompact.spark.merge import BatchMerger
from segcompact.spark.metrics_source import SparkMetrics
from segcompact.spark.source import NAME, SourceOptions, register
from segcompact.spark.state_files import filing_location
from segcompact.spark.table_reader import SparkSql
from segcompact.spark.tables import Tables
from segcompact.spark.upkeep import Upkeep
from segcompact.timing import timed


class Compactor:
    """The compactor on one session: its streaming query and the upkeep, after a batch or idle."""

    def __init__(
        self,
        spark: SparkSession,
        config: CompactorConfig,
        clock: Clock | None = None,
        metrics: JobMetrics | None = None,
    ) -> None:
        self.spark = spark
        self.config = config
        self.clock = clock or job_clock()
        self.metrics = metrics  # served by the caller; updated here after batches and upkeeps
        self.spark_metrics = (
            SparkMetrics(spark) if metrics is not None and config.metrics.spark else None
        )
        # Checked before anything starts: a topic with an SLA needs the ledger's secret.
        secret = job_secret(config)
        self.tables = Tables.of(config)
        with timed(log, "tables"):
            self.tables.ensure(spark)
        self.merger = BatchMerger(spark, self.tables, config, self.clock, secret=secret)
        self.materializer = Materializer(spark, config, self.tables, self.clock)
        self.eraser = Eraser(spark, config, self.tables, self.materializer.output, self.clock)
        self._upkeep_steps = Upkeep(self.merger, self.eraser, self.materializer, self.clock)
        # The upkeep runs at most this often: after a micro-batch of the continuous query, in
        # its thread, or from the idle timer (GracefulStop.wait) when no batch comes.
        self._upkeep_every = config.stream.materialize_check_interval_ms / 1000
        self._next_upkeep = time.monotonic() + self._upkeep_every
        # One writer at a time: a batch and the upkeep timer run on different threads, and
        # Delta's idempotent-write ids are session settings every thread would pick up.
        self._writing = threading.Lock()
        self._stop_lock = threading.Lock()
        self._stopping = False
        self._in_batch = False
        self._may_start = 0  # batches still allowed to start once stopping
        self.summary = RunSummary()  # what the batches read, for run --once's last line
        # The tables' figures before anything runs: until read, the metrics say they are not
        # ready (segcompact.metrics), and the warm-up and first upkeep can take a minute.
        self._refresh_metrics()

    def start(self, *, once: bool, on_batch: Callable[[int], None] | None = None) -> StreamingQuery:
        """Start the streaming query (``availableNow`` when ``once``)."""
        register(self.spark)
        reader = self.spark.readStream.format(NAME).options(**self._source_options())

        if self.metrics is not None:
            self.spark.streams.addListener(QueryListener(self.metrics))

        def batch(df: DataFrame, batch_id: int) -> None:
            self._enter_batch()
            start = time.monotonic()
            waited = 0.0
            try:
                with self._writing:
                    waited = time.monotonic() - start
                    retry_conflicts(lambda: self.merger(df, batch_id), f"batch {batch_id}")
                    self.summary.add_batch(self.merger.last_stats)
                    # The upkeep before the next batch is planned: a segment that arrives
                    # meanwhile is in that batch, not in the one after a timer's upkeep that
                    # waited for this batch. Else only the materialisation triggers.
                    if not once and time.monotonic() >= self._next_upkeep:
                        self._upkeep(settled=True)
                    else:
                        retry_conflicts(self.materializer.run, "materialisation")
            finally:
                self._in_batch = False
            took = time.monotonic() - start
            log.info("batch %d: %.1f s (%.1f s waiting for the upkeep)", batch_id, took, waited)
            if self.metrics is not None:
                self.metrics.batch(took - waited, self.merger.last_stats)
                self._refresh_metrics()
            if on_batch is not None:
                on_batch(batch_id)

        writer = (
            reader.load()
            .writeStream.queryName("segcompact")
            .foreachBatch(batch)
            .option("checkpointLocation", query_dir(self.config))
        )
        if once:
            writer = writer.trigger(**once_trigger())  # availableNow, or once before PySpark 4.2
        else:
            writer = writer.trigger(processingTime=self.config.stream.trigger_interval)
            # What is due first (a round a stop left open completes). Before it, the paths
            # every batch takes are warmed: the first batch's deadlines count on them.
            with timed(log, "warm-up"):
                self.tables.warm_up(self.spark)
                _warm_python_workers(self.spark)
            self.upkeep()
        return writer.start()

    def request_stop(self, trigger_active: bool) -> None:
        """Stop after the batch in flight: a trigger already active may still run its batch;
        any later batch is refused before it writes (its offsets stay uncommitted, so a
        restart reads it again)."""
        with self._stop_lock:
            if not self._stopping:
                self._stopping = True
                self._may_start = 1 if trigger_active and not self._in_batch else 0
                _quiet_refusal(self.spark)

    def _enter_batch(self) -> None:
        with self._stop_lock:
            if self._stopping:
                if self._may_start == 0:
                    raise StopRequested(STOP_MARKER)
                self._may_start -= 1
            self._in_batch = True

    def upkeep(self, *, force: bool = False) -> RoundReport:
        """What is due without input (:class:`~segcompact.spark.upkeep.Upkeep`): aged young
        records are compacted, expired tombstones leave the state, erasure rounds whose
        deadlines near are run (``force``: every pending erasure, ``segcompact purge --force``),
        and partitions whose triggers fire (max lag, a passed horizon, a moved log start) are
        re-materialised."""
        with self._writing:
            return self._upkeep(force=force)

    def materialize(
        self, *, topic: str | None = None, partition: int | None = None, force: bool = False
    ) -> list[dict[str, Any]]:
        """``segcompact materialize``: aged young records compacted, expired tombstones gone,
        then the selected partitions that are due (``force``: due or not) re-materialised."""
        with self._writing:
            return self._upkeep_steps.materialize(topic=topic, partition=partition, force=force)

    def upkeep_if_due(self) -> RoundReport | None:
        """The upkeep, unless a micro-batch ran it less than ``materialize_check_interval_ms``
        ago (the idle timer's call); else the metrics' figures, where a batch's refresh came
        too soon after the last one (they would wait for the next batch or upkeep)."""
        with self._writing:
            if time.monotonic() < self._next_upkeep:
                if self.metrics is not None and self.metrics.stale:
                    self._refresh_metrics()
                return None
            return self._upkeep()

    def _upkeep(self, *, force: bool = False, settled: bool = False) -> RoundReport:
        return retry_conflicts(lambda: self._upkeep_once(force, settled), "upkeep")

    def _upkeep_once(self, force: bool, settled: bool) -> RoundReport:
        start = time.monotonic()
        report = self._upkeep_steps.run(force=force, settled=settled)
        self._next_upkeep = time.monotonic() + self._upkeep_every
        took = self._next_upkeep - self._upkeep_every - start
        if took >= 1:
            log.info("upkeep: %.1f s", took)
        self._refresh_metrics()
        return report

    def _source_options(self) -> dict[str, str]:
        options = {
            "paths": ",".join(self.config.source.paths),
            "rolledOnly": str(self.config.source.rolled_only).lower(),
            "manifest": manifest_dir(self.config),
            # Each segment reduced in its task to what can still win (the merge reduces across).
            "compaction": Rankings.of(self.config).to_json(),
            # Each segment's summary row: its end offset, valid bytes and error for the merge.
            "summaries": "true",
            # Where a batch may ask its tasks to write new partitions' winners as the state's
            # own files (``state_files``).
            "stateFiles": filing_location(self.config.stream.checkpoint),
            # The source opens roots and manifest with the storage settings.
            **self.config.storage.hadoop,
        }
        limit = self.config.stream.max_segments_per_batch
        if limit:
            options["maxSegmentsPerTrigger"] = str(limit)
        return options

    def backlog(self) -> Backlog:
        """What a ``run --once`` started now reads. Discovery runs here first, as the query's
        source runs it (it then finds the same segments, or ones rolled since as well)."""
        options = SourceOptions.from_options(self._source_options())
        assert options.manifest is not None  # the job's options always name it
        manifest = Manifest(options.manifest, options.storage)
        manifest.discover(options.roots, rolled_only=options.rolled_only)
        return Backlog(manifest, QueryLog(query_dir(self.config), self.config.storage))

    def _refresh_metrics(self) -> None:
        """The metrics' table figures again, in Spark's metrics system too when asked; a failure
        to read or give them is logged, never the job's."""
        if self.metrics is None:
            return
        if self.materializer.last_recopy is not None:
            self.metrics.materialized(*self.materializer.last_recopy)
        try:
            self.metrics.refresh(self.config, self.clock.now_ms(), partial(SparkSql, self.spark))
            if self.spark_metrics is not None:
                self.spark_metrics.update(self.metrics.registry)
        except Exception as e:  # metrics must not stop compaction
            log.warning("metrics not refreshed: %s", root_cause(str(e)))

    def run_once(
        self, on_batch: Callable[[int], None] | None = None, backlog: Backlog | None = None
    ) -> RunSummary:
        """Process everything available (``backlog``: what :meth:`backlog` found, else it is
        asked now), then the upkeep that is due; return when done, with what was done. With
        nothing to read, the streaming query does not start: it would end at once, after
        seconds of starting."""
        backlog = backlog or self.backlog()
        summary = self.summary
        if backlog.empty:
            log.info("query: no segment to read")
        else:
            with timed(log, "query"):
                query = self.start(once=True, on_batch=on_batch)
                _finish(query)
            last = backlog.query.last_commit()
            summary.bytes = 0 if last is None else backlog.done(last)  # the files, damaged too
        if not self._stopping:  # a stop (a lost lease) writes nothing more
            self.upkeep()
            summary.uncleanable = self.materializer.uncleanable  # as the upkeep's plan read it
        summary.materialized = set(self.materializer.written)
        for tp, reason in self.materializer.failed.items():  # its output could not be written
            summary.found_uncleanable.setdefault(tp, reason)
        summary.keys = state_keys(self.config, summary.partitions)
        return summary


log = logging.getLogger(__name__)


def state_keys(config: CompactorConfig, partitions: set[tuple[str, int]]) -> int | None:
    """The keys the state holds for ``partitions``, by delta-rs (no Spark job); None when
    delta-rs cannot open the state table."""
    if not partitions:
        return 0
    sql = DeltaSql.open({"state": config.state.table}, config.storage)
    if sql is None:
        return None
    p = sql.quote("partition")
    try:
        rows = sql.query(f"SELECT topic, {p}, count(*) AS n FROM state GROUP BY topic, {p}")
    except NoTable:
        return 0
    return int(sum(r["n"] for r in rows.to_pylist() if (r["topic"], r["partition"]) in partitions))


STOP_MARKER = "segcompact: stop requested"


def _quiet_refusal(spark: SparkSession) -> None:
    """Spark logs a refused batch as the query failing, with two Python tracebacks: once a stop
    is requested, its streaming engine's log is turned off (``_finish`` still reports any other
    failure, in one line)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log4j = jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel(
        "org.apache.spark.sql.execution.streaming", log4j.Level.OFF
    )


def _warm_python_workers(spark: SparkSession) -> None:
    """Start a Python worker per core with the decoder's modules imported (the source, the
    ledger's hashing and the materialiser run there): seconds each the first time."""
    cores = spark.sparkContext.defaultParallelism
    spark.range(cores, numPartitions=cores).mapInArrow(_import_worker_modules, "id long").count()


def _import_worker_modules(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import segcompact.spark.source  # noqa: F401  (the decoder and its codecs)

    yield from batches


class StopRequested(Exception):
    """Raised at the start of a micro-batch once a stop was requested."""


def _finish(query: StreamingQuery) -> None:
    """Wait for the query to end; a failure other than a requested stop is an error."""
    with contextlib.suppress(Exception):  # StreamingQueryException: see query.exception()
        query.awaitTermination()
    error = query.exception()
    if error is not None and STOP_MARKER not in str(error):
        raise SegcompactError(f"streaming query failed: {root_cause(str(error))}")


class GracefulStop:
    """SIGTERM/SIGINT ask the query to stop once the batch in flight has finished; a second one
    ends the process at once, as without a handler (its JVM, which ignores SIGTERM, exits with
    it: :mod:`segcompact.spark.jvm`)."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._signalled = False

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set there; the host stops the query itself
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._signalled:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        self._signalled = True
        self.requested.set()

    def wait(self, compactor: Compactor, query: StreamingQuery) -> None:
        """Until the query ends: run the compactor's upkeep when due while no micro-batch runs
        (a batch runs it itself); on a stop request, stop after the batch in flight. Polls once
        a second."""
        while query.isActive:
            with contextlib.suppress(Exception):  # a failed query: reported by _finish
                query.awaitTermination(1)
            if self.requested.is_set():
                active = bool(query.status["isTriggerActive"])
                compactor.request_stop(active)
                if not active:
                    query.stop()
            elif query.isActive and not query.status["isTriggerActive"]:
                compactor.upkeep_if_due()  # idle: no batch will run it
        _finish(query)
