"""The names the job's metrics take in Spark's metrics system (Dropwizard: no labels)."""

from __future__ import annotations

from segcompact.erasure.report import build
from segcompact.metrics import JobMetrics
from segcompact.spark.metrics_source import gauge_name, samples


def test_a_gauge_is_named_by_its_topic_and_partition_or_its_kind() -> None:
    labels = {"partition": "3", "topic": "orders.eu"}
    assert gauge_name("segcompact_dirty_ratio", labels) == "dirty_ratio.orders.eu.3"
    assert gauge_name("segcompact_max_clean_time_secs", {}) == "max_clean_time_secs"
    assert gauge_name("segcompact_deletions_pending", {"kind": "delete"}) == (
        "deletions_pending.delete"
    )


def test_every_sample_of_the_registry_is_given_once_and_no_creation_time() -> None:
    metrics = JobMetrics()
    row = {
        "topic": "orders",
        "partition": 0,
        "max_compaction_delay_ms": 0,
        "dirty_ratio": 0.25,
        "dirty_bytes": 1,
        "clean_bytes": 3,
        "tombstones_pending": 0,
        "young_records": 0,
        "uncleanable": None,
        "last_materialized_ms": None,
    }
    metrics.tables([row], build([], [], lambda topic: None, 0), 0)
    metrics.records.inc(7)
    metrics.materialized(40, 160)
    given = samples(metrics.registry)
    assert given["dirty_ratio.orders.0"] == 0.25
    assert given["records_read_total"] == 7
    assert given["cleaner_recopy_percent"] == 25
    assert given["deletions_pending.delete"] == given["deletions_pending.overwrite"] == 0
    assert not any(name.endswith("_created") for name in given)
