"""The streaming job: the ``kafka-segments`` source into ``BatchMerger`` under a trigger.

One code path for the three deployments: the CLI (embedded), ``spark-submit`` and Databricks
call :func:`start_query` with a session and a loaded config.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from segcompact.clock import Clock, SystemClock
from segcompact.config import CompactorConfig
from segcompact.errors import SegcompactError
from segcompact.spark.materialize import Materializer
from segcompact.spark.merge import BatchMerger, Tables
from segcompact.spark.source import NAME, register


def tables_of(config: CompactorConfig) -> Tables:
    s = config.state
    return Tables.at(s.table, s.partitions_table, s.pending_table)


def manifest_dir(config: CompactorConfig) -> str:
    """The source's segment manifest lives beside the query's checkpoint."""
    return os.path.join(config.stream.checkpoint, "manifest")


class Compactor:
    """The compactor on one session: its streaming query and the upkeep between batches."""

    def __init__(
        self, spark: SparkSession, config: CompactorConfig, clock: Clock | None = None
    ) -> None:
        self.spark = spark
        self.config = config
        self.clock = clock or SystemClock()
        self.tables = tables_of(config)
        self.tables.ensure(spark)
        self.merger = BatchMerger(spark, self.tables, config.topic, self.clock)
        self.materializer = Materializer(spark, config, self.tables, self.clock)

    def start(self, *, once: bool, on_batch: Callable[[int], None] | None = None) -> StreamingQuery:
        """Start the streaming query (``availableNow`` when ``once``)."""
        register(self.spark)
        reader = (
            self.spark.readStream.format(NAME)
            .option("paths", ",".join(self.config.source.paths))
            .option("rolledOnly", str(self.config.source.rolled_only).lower())
            .option("manifest", manifest_dir(self.config))
        )
        limit = self.config.stream.max_segments_per_batch
        if limit:
            reader = reader.option("maxSegmentsPerTrigger", str(limit))

        def batch(df: DataFrame, batch_id: int) -> None:
            self.merger(df, batch_id)
            self.materializer.run()  # triggers are evaluated after every micro-batch
            if on_batch is not None:
                on_batch(batch_id)

        writer = (
            reader.load()
            .writeStream.queryName("segcompact")
            .foreachBatch(batch)
            .option("checkpointLocation", os.path.join(self.config.stream.checkpoint, "query"))
        )
        if once:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.config.stream.trigger_interval)
        return writer.start()

    def upkeep(self) -> None:
        """What is due without input: expired tombstones leave the state, and partitions whose
        triggers fire (max lag, a passed horizon, a moved log start) are re-materialised."""
        self.merger.expire(self.clock.now_ms())
        self.materializer.run()

    def run_once(self, on_batch: Callable[[int], None] | None = None) -> None:
        """Process everything available, then the upkeep that is due; return when done."""
        query = self.start(once=True, on_batch=on_batch)
        query.awaitTermination()
        error = query.exception()
        if error is not None:
            raise SegcompactError(f"streaming query failed: {error}")
        self.upkeep()


class GracefulStop:
    """SIGTERM/SIGINT ask the query to stop once the batch in flight has finished."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set there; the host stops the query itself
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested.set()

    def wait(self, query: StreamingQuery, upkeep: Callable[[], None], interval_ms: int) -> None:
        """Until the query ends: run ``upkeep`` every ``interval_ms``; on a stop request, stop
        the query once no batch is running. Polls once a second."""
        due = time.monotonic() + interval_ms / 1000
        while query.isActive:
            query.awaitTermination(1)
            if self.requested.is_set():
                if not query.status["isTriggerActive"]:
                    query.stop()
            elif query.isActive and time.monotonic() >= due:
                upkeep()
                due = time.monotonic() + interval_ms / 1000
        error = query.exception()
        if error is not None:
            raise SegcompactError(f"streaming query failed: {error}")
