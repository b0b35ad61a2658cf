"""The Grafana dashboard in deploy/grafana: valid JSON, and each of its queries names only
metrics the job exports (a renamed metric would leave a panel empty without this)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from segcompact.erasure.report import build
from segcompact.metrics import JobMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "segcompact.json"


def _exported() -> set[str]:
    """The names a scrape shows once the job has seen each source (a gauge is absent until
    then): a counter's samples end in _total."""
    metrics = JobMetrics()
    metrics.tables([], build([], [], lambda topic: None, 0), 0)
    metrics.batch(1.0, [])
    metrics.materialized(1, 1)
    metrics.trigger(1.0, 1)
    names = set()
    for family in metrics.registry.collect():
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def test_every_query_names_an_exported_metric() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    exported = _exported()
    for expr in exprs:
        named = set(re.findall(r"\bsegcompact_[a-z_]+\b", expr))
        assert named, expr
        assert named <= exported, (expr, named - exported)


def test_the_dashboard_covers_delay_dirty_ratio_throughput_the_sla_and_unread_data() -> None:
    exprs = " ".join(
        t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]
    )
    for metric in (
        "segcompact_max_compaction_delay_secs",
        "segcompact_dirty_ratio",
        "segcompact_bytes_read_total",
        "segcompact_deletions_breached",
        "segcompact_unverified_partitions",
        "segcompact_oldest_unread_age_secs",
    ):
        assert metric in exprs, metric


def test_a_misspelt_metric_is_caught() -> None:
    exported = _exported()
    assert "segcompact_dirty_ratio" in exported
    assert "segcompact_dirty_ratios" not in exported
