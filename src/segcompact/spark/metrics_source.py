"""The job's metrics in Spark's own metrics system (``[metrics] spark = true``).

A source named ``segcompact`` holds one Dropwizard gauge per sample of the job's Prometheus
registry (:class:`segcompact.metrics.JobMetrics`), so whatever sinks the cluster's Spark
configures (``spark.metrics.conf.*``: JMX, Graphite, StatsD, the driver's PrometheusServlet, a
Databricks cluster's own) export them beside Spark's. Dropwizard has no labels: a partition's
gauge is named ``<metric>.<topic>.<partition>``, an erasure kind's ``<metric>.<kind>``, without
the ``segcompact_`` prefix the source's name already gives
(``<namespace>.driver.segcompact.dirty_ratio.orders.0``, ``….deletions_pending.delete``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.java_gateway import ensure_callback_server_started

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from pyspark.sql import SparkSession

SOURCE_NAME = "segcompact"
PREFIX = "segcompact_"


def gauge_name(sample: str, labels: dict[str, str]) -> str:
    """The Dropwizard name of a Prometheus sample: ``dirty_ratio.orders.0``,
    ``deletions_pending.delete``."""
    name = sample.removeprefix(PREFIX)
    return ".".join([name, *(labels[k] for k in ("kind", "topic", "partition") if k in labels)])


def samples(registry: CollectorRegistry) -> dict[str, float]:
    """Every sample of ``registry`` by its Dropwizard name (counters' ``_created`` left out)."""
    return {
        gauge_name(s.name, s.labels): float(s.value)
        for family in registry.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    }


class _Source:
    """Spark's ``Source`` trait, implemented here and called back through Py4J: Spark asks it
    for its name and registry once, when it is registered."""

    def __init__(self, registry: Any) -> None:
        self._registry = registry

    def sourceName(self) -> str:  # Spark's method names
        return SOURCE_NAME

    def metricRegistry(self) -> Any:
        return self._registry

    class Java:
        implements = ["org.apache.spark.metrics.source.Source"]


class SparkMetrics:
    """The ``segcompact`` source of this driver's metrics system, kept equal to a registry."""

    def __init__(self, spark: SparkSession) -> None:
        sc = spark.sparkContext
        ensure_callback_server_started(sc._gateway)  # type: ignore[no-untyped-call]
        assert sc._jvm is not None
        self._jvm = sc._jvm
        self._metrics = self._jvm.com.codahale.metrics
        self._registry = self._metrics.MetricRegistry()
        self._gauges: dict[str, Any] = {}
        self._values: dict[str, float] = {}
        self._source = _Source(self._registry)  # referenced here for as long as Spark holds it
        # A registry's gauges added later reach the metrics system too (Dropwizard 4 listens).
        self._jvm.org.apache.spark.SparkEnv.get().metricsSystem().registerSource(self._source)

    def update(self, registry: CollectorRegistry) -> None:
        """The gauges set to ``registry``'s samples now; a sample gone (a partition no longer
        in the tables) removes its gauge. Only changed values cross to the JVM."""
        now = samples(registry)
        for name in self._gauges.keys() - now.keys():
            self._registry.remove(name)
            del self._gauges[name], self._values[name]
        for name, value in now.items():
            if self._values.get(name) == value:
                continue
            boxed = self._jvm.java.lang.Double(value)
            gauge = self._gauges.get(name)
            if gauge is None:
                gauge = self._gauges[name] = self._metrics.DefaultSettableGauge(boxed)
                self._registry.register(name, gauge)
            else:
                gauge.setValue(boxed)
            self._values[name] = value
