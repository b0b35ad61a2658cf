"""The shipper's metrics for Prometheus, on ``http://<[metrics] host>:<[metrics] port>/metrics``.

Counters start at 0 (nothing shipped yet is a fact). The gauges of a poll (lag, partitions)
are absent until a poll has looked at every partition, never 0 for "not looked yet"; a poll
that could not list a directory leaves them absent again, since the lag there is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector


class _Lag(Collector):
    """The gauges of the last poll, exported once known."""

    def __init__(self) -> None:
        self.seconds: float | None = None
        self.bytes = 0
        self.segments = 0
        self.partitions = 0
        self.elsewhere = 0

    def collect(self) -> Iterable[Metric]:
        if self.seconds is None:
            return []
        out: list[Metric] = []
        for name, doc, value in (
            (
                "segcompact_ship_lag_seconds",
                "Age of the oldest rolled segment not shipped yet (0: none waits)",
                self.seconds,
            ),
            ("segcompact_ship_lag_bytes", "Bytes of rolled segments not shipped yet", self.bytes),
            ("segcompact_ship_lag_segments", "Rolled segments not shipped yet", self.segments),
            ("segcompact_ship_partitions", "Partitions this shipper ships", self.partitions),
            (
                "segcompact_ship_partitions_elsewhere",
                "Selected partitions here that another log dir's shipper ships (replicas)",
                self.elsewhere,
            ),
        ):
            gauge = Gauge(name, doc, registry=None)
            gauge.set(value)
            out.extend(gauge.collect())
        return out

    def describe(self) -> Iterable[Metric]:
        return []


class ShipMetrics:
    """What the shipper did, and what waits."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.segments = Counter(
            "segcompact_ship_segments", "Segments shipped", registry=self.registry
        )
        self.bytes = Counter("segcompact_ship_bytes", "Bytes shipped", registry=self.registry)
        self.gaps = Counter(
            "segcompact_ship_gaps",
            "Offset ranges deleted by the broker before they were shipped",
            registry=self.registry,
        )
        self.damaged = Counter(
            "segcompact_ship_damaged",
            "Local segments that failed their checks and were not shipped",
            registry=self.registry,
        )
        self.errors = Counter(
            "segcompact_ship_errors",
            "Failures to list, read or upload, retried at the next poll",
            registry=self.registry,
        )
        self.polls = Counter("segcompact_ship_polls", "Polls done", registry=self.registry)

        self._lag = _Lag()
        self.registry.register(self._lag)

    def serve(self, host: str, port: int) -> None:
        """Serve ``/metrics`` from a daemon thread of this process."""
        start_http_server(port, addr=host, registry=self.registry)

    def lag(
        self, seconds: float | None, size: int, segments: int, partitions: int, elsewhere: int
    ) -> None:
        """After a poll: the oldest waiting segment's age (None: unknown, and every gauge of
        the poll absent), what waits, and the partitions shipped here and elsewhere."""
        self._lag.seconds = seconds
        self._lag.bytes = size
        self._lag.segments = segments
        self._lag.partitions = partitions
        self._lag.elsewhere = elsewhere
