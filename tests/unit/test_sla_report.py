"""The SLA report's model without Spark: the summary adds up, the period is the rows' span, the
scope names the job, and the text format leads with the summary."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from segcompact.config import parse_config
from segcompact.erasure.report import build, text
from segcompact.erasure.summary import scope, shares
from tests.support.config import located
from tests.support.ledger import HOUR, MINUTE, SLAS, T0, delete_row, round_row


def test_summary_counts_and_percentages_overall_by_kind_and_topic() -> None:
    deletes = [
        delete_row("users", 1, T0, 20 * MINUTE),  # met
        delete_row("users", 2, T0, 90 * MINUTE),  # breached: done after the hour
        delete_row("users", 3, T0 + 50 * MINUTE, None),  # pending: due at T0 + 110 min
        delete_row("orders", 4, T0 + 10 * MINUTE, 100 * MINUTE),  # met within two hours
    ]
    rounds = [round_row("orders", 1, T0 - 5 * MINUTE, 30 * MINUTE)]
    report = build(deletes, rounds, SLAS.get, T0 + 100 * MINUTE)
    summary = report["summary"]
    overall = summary["overall"]
    assert (overall["total"], overall["met"], overall["pending"], overall["breached"]) == (
        5,
        3,
        1,
        1,
    )
    assert overall["percent"] == {"met": 60.0, "pending": 20.0, "breached": 20.0}
    assert summary["by_kind"]["deletion"]["total"] == 4
    assert summary["by_kind"]["overwrite"] == {
        "total": 1, "met": 1, "pending": 0, "breached": 0,
        "percent": {"met": 100.0, "pending": 0.0, "breached": 0.0},
    }  # fmt: skip
    users, orders = sorted(summary["by_topic"], key=lambda t: t["topic"] != "users")
    assert (users["topic"], users["sla_ms"], users["met"], users["breached"]) == (
        "users", HOUR, 1, 1)  # fmt: skip
    assert users["percent"] == {"met": 33.3, "pending": 33.3, "breached": 33.4}
    assert (orders["sla_ms"], orders["total"], orders["met"]) == (2 * HOUR, 2, 2)
    # The period runs from the round's oldest value to the last deletion.
    assert report["period"] == {
        "first": "2026-11-18T11:01:40.000Z",
        "last": "2026-11-18T11:56:40.000Z",
    }
    assert report["not_owned"] and all(n["what"] and n["note"] for n in report["not_owned"])
    first = text(report).splitlines()[0]
    assert first.startswith("3 of 5 met (60.0 %), 1 pending, 1 breached;")
    assert "2026-11-18T11:01:40.000Z to 2026-11-18T11:56:40.000Z" in first


def test_an_empty_ledger_has_an_empty_summary_and_no_period() -> None:
    report = build([], [], SLAS.get, T0)
    assert report["summary"]["overall"] == {
        "total": 0, "met": 0, "pending": 0, "breached": 0,
        "percent": {"met": 0.0, "pending": 0.0, "breached": 0.0},
    }  # fmt: skip
    assert report["summary"]["by_topic"] == []
    assert report["period"] == {"first": None, "last": None}
    assert report["generated_at"] == "2026-11-18T11:06:40.000Z"


@given(st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 10**6), min_size=1))
def test_shares_sum_to_exactly_100_and_stay_within_a_tenth(counts: dict[str, int]) -> None:
    got = shares(counts)
    assert set(got) == set(counts)
    total = sum(counts.values())
    if total == 0:
        assert set(got.values()) == {0.0}
        return
    assert sum(round(p * 10) for p in got.values()) == 1000
    for k, n in counts.items():
        assert abs(got[k] - 100 * n / total) < 0.1 + 1e-9


_offsets = st.integers(0, 10 * HOUR)
_took = st.one_of(st.none(), st.integers(0, 3 * HOUR))
_rows = st.lists(st.tuples(st.sampled_from(sorted(SLAS)), _offsets, _took), max_size=30)


@given(_rows, _rows, st.integers(0, 20 * HOUR))
def test_random_ledgers_add_up(
    deletes: list[tuple[str, int, int | None]],
    rounds: list[tuple[str, int, int | None]],
    later: int,
) -> None:
    d = [delete_row(t, n, T0 + at, took) for n, (t, at, took) in enumerate(deletes)]
    r = [round_row(t, n, T0 + at, took) for n, (t, at, took) in enumerate(rounds)]
    report = build(d, r, SLAS.get, T0 + later)
    summary = report["summary"]
    overall, kinds = summary["overall"], summary["by_kind"]
    statuses = ("met", "pending", "breached")
    assert overall["total"] == len(d) + len(r) == sum(overall[s] for s in statuses)
    assert kinds["deletion"]["total"] == len(d) and kinds["overwrite"]["total"] == len(r)
    for s in ("total", *statuses):
        assert overall[s] == kinds["deletion"][s] + kinds["overwrite"][s]
        assert overall[s] == sum(t[s] for t in summary["by_topic"])
    for tally in (overall, *kinds.values(), *summary["by_topic"]):
        tenths = sum(round(p * 10) for p in tally["percent"].values())
        assert tenths == (1000 if tally["total"] else 0)
    assert {t["topic"] for t in summary["by_topic"]} == {x[0] for x in (*deletes, *rounds)}
    first, last = report["period"]["first"], report["period"]["last"]
    assert (first is None) == (last is None) == (not d and not r)
    if first is not None:
        assert first <= last  # ISO-8601 in UTC sorts as time does


def test_scope_names_the_job_and_every_topic_with_a_deadline() -> None:
    cfg = parse_config(
        located({
            "source": {"paths": ["in"]},
            "defaults": {"gdpr.deletion.sla.ms": 30 * 24 * HOUR},
            "topics": {"fast": {"gdpr.deletion.sla.ms": 4 * HOUR},
                       "none": {"gdpr.deletion.sla.ms": "none"}},
        }),
        "c.toml",
    )  # fmt: skip
    got = scope(cfg, "conf/c.toml")
    assert got["config"] == "conf/c.toml"
    assert got["topics"] == [
        {"topic": "fast", "sla_ms": 4 * HOUR},
        {"topic": "*", "sla_ms": 30 * 24 * HOUR},
    ]
    assert got["state_table"] == cfg.state.table and got["ledger_table"] == cfg.state.ledger_table
    assert (got["output"], got["checkpoint"]) == (cfg.output.path, cfg.stream.checkpoint)
    assert got["sources"] == list(cfg.source.paths)
