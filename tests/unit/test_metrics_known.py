"""The job's metrics say nothing they have not seen: a gauge is absent until its source was read
(``segcompact_metrics_ready`` says whether the tables were), and the deletion SLA's figures are
``segcompact sla``'s counts, by kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from segcompact import metrics as metrics_module
from segcompact.config import load_config
from segcompact.erasure.report import build
from segcompact.erasure.schedule import ROUND_STAGES, STAGES
from segcompact.metrics import JobMetrics
from tests.support.config import write_config

NOW_MS = 1_700_000_000_000
SLA_MS = 86_400_000

Scrape = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(metrics: JobMetrics) -> Scrape:
    """What Prometheus reads: the registry in its text format, parsed back."""
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def names(scraped: Scrape) -> set[str]:
    return {name for name, _ in scraped}


def status_row(topic: str, partition: int) -> dict[str, Any]:
    """A ``segcompact status`` row of a healthy partition."""
    return {
        "topic": topic,
        "partition": partition,
        "max_compaction_delay_ms": 0,
        "dirty_ratio": 0.0,
        "dirty_bytes": 0,
        "clean_bytes": 10,
        "tombstones_pending": 0,
        "young_records": 0,
        "uncleanable": None,
        "last_materialized_ms": None,
    }


def delete_row(appended: int, done: int = 0, **at: int) -> dict[str, Any]:
    """A ledger delete row appended at ``appended``, its first ``done`` stages (after seen) at
    the given times or a second after the append."""
    row: dict[str, Any] = {
        "topic": "users",
        "partition": 0,
        "key_hash": f"h{appended}",
        "offset": appended % 1000,
        "appended_at": appended,
        "deadline": appended + SLA_MS,
    }
    for stage in STAGES[:done]:
        row[f"{stage}_at"] = at.get(stage, appended + 1000)
    return row


def round_row(appended: int, done: int = 0) -> dict[str, Any]:
    row: dict[str, Any] = {
        "topic": "users",
        "partition": 0,
        "round": appended,
        "appended_at": appended,
        "deadline": appended + SLA_MS,
    }
    for stage in ROUND_STAGES[:done]:
        row[f"{stage}_at"] = appended + 1000
    return row


def test_before_the_tables_are_read_no_table_gauge_is_exported_and_ready_is_0() -> None:
    before = scrape(JobMetrics())
    assert before[("segcompact_metrics_ready", ())] == 0
    # Only what is true before anything ran: nothing read, no query active, not ready.
    assert names(before) == {
        "segcompact_metrics_ready",
        "segcompact_query_active",
        "segcompact_records_read_total",
        "segcompact_bytes_read_total",
        "segcompact_batches_total",
        *(f"segcompact_{n}_created" for n in ("records_read", "bytes_read", "batches")),
    }


def test_once_the_tables_are_read_ready_is_1_and_every_kind_is_counted() -> None:
    metrics = JobMetrics()
    deletes = [delete_row(NOW_MS - 5000), delete_row(NOW_MS - 3000), delete_row(NOW_MS - 9000, 6)]
    rounds = [round_row(NOW_MS - 7000)]
    report = build(deletes, rounds, lambda topic: SLA_MS, NOW_MS)
    metrics.tables([status_row("users", 0)], report, NOW_MS)
    after = scrape(metrics)
    assert after[("segcompact_metrics_ready", ())] == 1
    pending = "segcompact_deletions_pending"
    assert after[(pending, (("kind", "delete"),))] == 2  # the third is done
    assert after[(pending, (("kind", "overwrite"),))] == 1
    oldest = "segcompact_oldest_pending_deletion_age_secs"
    assert after[(oldest, (("kind", "delete"),))] == 5  # not the done one's 9 s
    assert after[(oldest, (("kind", "overwrite"),))] == 7
    assert after[("segcompact_deletions_breached", (("kind", "delete"),))] == 0
    assert after[("segcompact_dirty_ratio", (("partition", "0"), ("topic", "users")))] == 0
    assert "segcompact_max_clean_time_secs" not in names(after)  # no batch yet


def test_a_failed_read_of_the_tables_makes_their_gauges_absent_again(tmp_path: Path) -> None:
    metrics = JobMetrics()
    report = build([delete_row(NOW_MS - 5000)], [], lambda topic: SLA_MS, NOW_MS)
    metrics.tables([status_row("users", 0)], report, NOW_MS)
    assert scrape(metrics)[("segcompact_metrics_ready", ())] == 1
    # A partitions table whose log delta-rs cannot read, and no Spark to ask: the read fails.
    config = load_config(write_config(tmp_path, [tmp_path / "in"]))
    log = Path(config.state.partitions_table, "_delta_log")
    log.mkdir(parents=True)
    (log / "00000000000000000000.json").write_text("not a Delta log\n")

    def no_spark(views: object) -> Any:
        raise RuntimeError("no Spark in this test")

    with pytest.raises(RuntimeError, match="no Spark"):
        metrics.refresh(config, NOW_MS, no_spark, force=True)
    after = scrape(metrics)
    assert after[("segcompact_metrics_ready", ())] == 0
    assert "segcompact_deletions_pending" not in names(after)  # not the last read's 1


def test_the_gauges_of_a_batch_a_materialisation_and_a_trigger_wait_for_one() -> None:
    metrics = JobMetrics()
    metrics.materialized(10, 40)
    metrics.trigger(2.5, 70)
    scraped = scrape(metrics)
    assert scraped[("segcompact_cleaner_recopy_percent", ())] == 25
    assert scraped[("segcompact_trigger_input_rows", ())] == 70
    assert not names(scraped) & {
        "segcompact_batch_duration_secs",
        "segcompact_time_since_last_run_ms",
        "segcompact_max_compaction_delay_secs",
    }


def test_time_since_last_run_counts_from_the_end_of_the_last_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(metrics_module.time, "monotonic", lambda: now[0])
    metrics = JobMetrics()
    assert ("segcompact_time_since_last_run_ms", ()) not in scrape(metrics)
    metrics.batch(4.0, [{"records": 3, "dirty_bytes": 100}])
    now[0] += 2.5
    assert scrape(metrics)[("segcompact_time_since_last_run_ms", ())] == 2500
    metrics.batch(1.0, [])
    now[0] += 0.25
    scraped = scrape(metrics)
    assert scraped[("segcompact_time_since_last_run_ms", ())] == 250
    assert scraped[("segcompact_max_clean_time_secs", ())] == 4


stage_times = st.one_of(st.none(), st.integers(NOW_MS - 3 * SLA_MS, NOW_MS))


@st.composite
def ledger_row(draw: st.DrawFn, stages: tuple[str, ...], kind: str) -> dict[str, Any]:
    appended = draw(st.integers(NOW_MS - 3 * SLA_MS, NOW_MS))
    row: dict[str, Any] = {
        "topic": draw(st.sampled_from(["users", "orders"])),
        "partition": draw(st.integers(0, 2)),
        "appended_at": appended,
        "deadline": appended + draw(st.sampled_from([1000, SLA_MS])),
        **{f"{s}_at": draw(stage_times) for s in stages},
    }
    if kind == "delete":
        row |= {"key_hash": "h", "offset": draw(st.integers(0, 100))}
    else:
        row["round"] = draw(st.integers(0, 100))
    return row


@given(
    deletes=st.lists(ledger_row(STAGES, "delete"), max_size=8),
    rounds=st.lists(ledger_row(ROUND_STAGES, "overwrite"), max_size=8),
)
def test_the_metrics_count_what_sla_counts(
    deletes: list[dict[str, Any]], rounds: list[dict[str, Any]]
) -> None:
    report = build(deletes, rounds, lambda topic: SLA_MS, NOW_MS)
    metrics = JobMetrics()
    metrics.tables([], report, NOW_MS)
    scraped = scrape(metrics)
    for status in ("pending", "breached"):
        counted = {
            kind: scraped[(f"segcompact_deletions_{status}", (("kind", kind),))]
            for kind in ("delete", "overwrite")
        }
        # sla's figures: a count per partition, both kinds together.
        assert sum(counted.values()) == sum(p[status] for p in report["partitions"])
        per_kind = {
            "delete": sum(r["status"] == status for r in report["deletions"]),
            "overwrite": sum(r["status"] == status for r in report["overwrites"]),
        }
        assert counted == per_kind
