"""The streaming job: the ``kafka-segments`` source into ``BatchMerger`` under a trigger.

One code path for the three deployments: the CLI (embedded), ``spark-submit`` and Databricks
call :func:`start_query` with a session and a loaded config.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from segcompact.clock import Clock, SystemClock
from segcompact.config import CompactorConfig
from segcompact.spark.merge import BatchMerger, Tables
from segcompact.spark.source import NAME, register


def tables_of(config: CompactorConfig) -> Tables:
    s = config.state
    return Tables.at(s.table, s.partitions_table, s.pending_table)


def manifest_dir(config: CompactorConfig) -> str:
    """The source's segment manifest lives beside the query's checkpoint."""
    return os.path.join(config.stream.checkpoint, "manifest")


def start_query(
    spark: SparkSession,
    config: CompactorConfig,
    *,
    once: bool,
    clock: Clock | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> StreamingQuery:
    """Start the compactor's streaming query (``availableNow`` when ``once``)."""
    register(spark)
    tables = tables_of(config)
    tables.ensure(spark)
    merger = BatchMerger(spark, tables, config.topic, clock or SystemClock())
    reader = (
        spark.readStream.format(NAME)
        .option("paths", ",".join(config.source.paths))
        .option("rolledOnly", str(config.source.rolled_only).lower())
        .option("manifest", manifest_dir(config))
    )
    if config.stream.max_segments_per_batch:
        reader = reader.option("maxSegmentsPerTrigger", str(config.stream.max_segments_per_batch))

    def batch(df, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        merger(df, batch_id)
        if on_batch is not None:
            on_batch(batch_id)

    writer = (
        reader.load()
        .writeStream.queryName("segcompact")
        .foreachBatch(batch)
        .option("checkpointLocation", os.path.join(config.stream.checkpoint, "query"))
    )
    if once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=config.stream.trigger_interval)
    return writer.start()


class GracefulStop:
    """SIGTERM/SIGINT ask the query to stop once the batch in flight has finished."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested.set()

    def wait(self, query: StreamingQuery, poll_seconds: float = 1.0) -> None:
        """Block until the query ends, or until a stop was requested and no batch is running."""
        while query.isActive:
            query.awaitTermination(poll_seconds)
            if self.requested.is_set() and not query.status["isTriggerActive"]:
                query.stop()
        query.awaitTermination()
