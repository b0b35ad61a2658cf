"""The names the job's metrics take in Spark's metrics system (Dropwizard: no labels)."""

from __future__ import annotations

from segcompact.metrics import JobMetrics
from segcompact.spark.metrics_source import gauge_name, samples


def test_a_partition_gauge_is_named_by_its_topic_and_partition() -> None:
    labels = {"partition": "3", "topic": "orders.eu"}
    assert gauge_name("segcompact_dirty_ratio", labels) == "dirty_ratio.orders.eu.3"
    assert gauge_name("segcompact_max_clean_time_secs", {}) == "max_clean_time_secs"


def test_every_sample_of_the_registry_is_given_once_and_no_creation_time() -> None:
    metrics = JobMetrics()
    metrics.dirty_ratio.labels("orders", "0").set(0.25)
    metrics.records.inc(7)
    metrics.materialized(40, 160)
    given = samples(metrics.registry)
    assert given["dirty_ratio.orders.0"] == 0.25
    assert given["records_read_total"] == 7
    assert given["cleaner_recopy_percent"] == 25
    assert not any(name.endswith("_created") for name in given)
