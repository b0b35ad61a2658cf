"""The streaming query's listener: its progress into the job's metrics (``segcompact.metrics``)."""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from segcompact.metrics import JobMetrics


class QueryListener(StreamingQueryListener):
    """Whether the query is active, and what its last trigger took and read."""

    def __init__(self, metrics: JobMetrics) -> None:
        self.metrics = metrics

    def onQueryStarted(self, event: Any) -> None:
        self.metrics.query_active.set(1)

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        self.metrics.trigger(progress.batchDuration / 1000, progress.numInputRows)

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.metrics.query_active.set(0)
