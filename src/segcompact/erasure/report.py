"""The deletion-SLA report: ledger rows in, per-partition figures and every row out. Pure.

``segcompact sla --format json`` prints :func:`build`'s object; ``--format text`` prints
:func:`text`; ``--format html`` renders it with :mod:`segcompact.erasure.html`. Rows come as
dicts with times in epoch milliseconds (``spark.ledger.read_rows``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

from segcompact.erasure.glossary import NOT_OWNED
from segcompact.erasure.schedule import (
    EXPIRED,
    ROUND_STAGES,
    STAGES,
    Status,
    percentile,
    row_outcome,
)
from segcompact.erasure.summary import period, summary
from segcompact.erasure.unread import BREACHED, UnreadPartition, place, reported
from segcompact.humanize import duration, iso_time

Row = Mapping[str, Any]


@overload
def iso(ms: int) -> str: ...
@overload
def iso(ms: int | None) -> str | None: ...
def iso(ms: int | None) -> str | None:
    return None if ms is None else iso_time(ms)


def _judged(row: Row, required: Sequence[str], now: int) -> tuple[str, str | None, int | None]:
    """The row's status now: a pending row past its deadline is a breach already."""
    result = row_outcome(row, required, now)
    return result.status, result.breach_stage, result.completed_ms


def _delete(row: Row, now: int) -> dict[str, Any]:
    status, stage, completed = _judged(row, STAGES[1:], now)
    return {
        "topic": row["topic"],
        "partition": row["partition"],
        "key_hash": row["key_hash"],
        "offset": row["offset"],
        "appended_at": iso(row["appended_at"]),
        "deadline": iso(row["deadline"]),
        "completed_at": iso(completed),
        "status": status,
        "breach_stage": stage,
        "stages": {s: iso(row.get(f"{s}_at")) for s in (*STAGES, EXPIRED)},
        "error": row.get("error"),
    }


def _round(row: Row, now: int) -> dict[str, Any]:
    status, stage, completed = _judged(row, ROUND_STAGES, now)
    return {
        "topic": row["topic"],
        "partition": row["partition"],
        "round": row["round"],
        "appended_from": iso(row["appended_at"]),
        "deadline": iso(row["deadline"]),
        "completed_at": iso(completed),
        "status": status,
        "breach_stage": stage,
        "stages": {s: iso(row.get(f"{s}_at")) for s in ROUND_STAGES},
        "output_version": row.get("output_version"),
        "error": row.get("error"),
    }


def _durations(row: Row, stages: Sequence[str]) -> dict[str, int]:
    """Each stage's time after the one before it (the first after the append)."""
    out = {}
    previous = row["appended_at"]
    for s in stages:
        at = row.get(f"{s}_at")
        if at is None:
            continue
        out[s] = max(0, at - previous)
        previous = at
    return out


def build(
    deletes: Sequence[Row],
    rounds: Sequence[Row],
    sla_of: Callable[[str], int | None],
    now: int,
    upstream: Sequence[Mapping[str, str]] = (),
    scope: Mapping[str, Any] | None = None,
    unread: Sequence[UnreadPartition] = (),
) -> dict[str, Any]:
    """The report: a summary, the period and ``scope`` (:func:`summary.scope`) it covers, per
    partition figures, every delete and round row, the partitions whose source data not merged
    is unverified or breached (``unread``: :func:`segcompact.erasure.unread.judge`'s), the
    upstream copies and what is not owned."""
    by_tp: dict[tuple[str, int], dict[str, Any]] = {}
    waits: dict[tuple[str, int], list[int]] = defaultdict(list)
    spans: dict[tuple[str, int], list[dict[str, int]]] = defaultdict(list)
    deletions = [_delete(r, now) for r in deletes]
    overwrites = [_round(r, now) for r in rounds]
    for raw, shown, stages in [
        *((r, d, STAGES) for r, d in zip(deletes, deletions, strict=True)),
        *((r, o, ROUND_STAGES) for r, o in zip(rounds, overwrites, strict=True)),
    ]:
        tp = (raw["topic"], raw["partition"])
        part = by_tp.setdefault(
            tp,
            {
                "topic": tp[0],
                "partition": tp[1],
                "sla_ms": sla_of(tp[0]),
                Status.PENDING: 0,
                Status.MET: 0,
                Status.BREACHED: 0,
                "oldest_pending": None,
            },
        )
        part[shown["status"]] += 1
        completed = raw.get("completed_at")
        if completed is not None:
            waits[tp].append(completed - raw["appended_at"])
            spans[tp].append(_durations(raw, stages))
        if completed is None and "key_hash" in shown:
            oldest = part["oldest_pending"]
            if oldest is None or shown["appended_at"] < oldest["appended_at"]:
                part["oldest_pending"] = {
                    k: shown[k] for k in ("key_hash", "offset", "appended_at", "deadline")
                }
    for tp, part in by_tp.items():
        w = waits[tp]
        part["time_to_erasure_ms"] = (
            {"p50": percentile(w, 0.5), "p99": percentile(w, 0.99), "max": max(w)} if w else None
        )
        part["stage_ms"] = {
            s: sum(d[s] for d in spans[tp] if s in d) // n
            for s in STAGES
            if (n := sum(1 for d in spans[tp] if s in d))
        }
    covered = period(deletes, rounds)
    return {
        "generated_at": iso(now),
        "period": {"first": iso(covered["first_ms"]), "last": iso(covered["last_ms"])},
        "scope": dict(scope or {}),
        "summary": summary(deletions, overwrites, sla_of),
        "partitions": [by_tp[tp] for tp in sorted(by_tp)],
        "deletions": deletions,
        "overwrites": overwrites,
        "unread": [p.as_json(iso) for p in reported(unread)],
        "upstream": list(upstream),
        "not_owned": [{"what": what, "note": note} for what, note in NOT_OWNED],
    }


# The report's two kinds of erasure: a deleted key's ledger row, and an erasure round of values
# overwritten; the report's field holding each.
KINDS = {"delete": "deletions", "overwrite": "overwrites"}


def by_kind(report: Mapping[str, Any], status: str) -> dict[str, list[Mapping[str, Any]]]:
    """The report's rows of ``status``, by kind (:data:`KINDS`): what each partition's count of
    that status adds up to, in ``sla`` and the job's metrics alike."""
    return {kind: [r for r in report[f] if r["status"] == status] for kind, f in KINDS.items()}


def breached(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The report's deletions and rounds that missed their deadline."""
    return [r for rows in by_kind(report, Status.BREACHED).values() for r in rows]


def unread_breaches(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The report's partitions whose unread source data is past its deadline."""
    return [p for p in report.get("unread", ()) if p["status"] == BREACHED]


def text(report: Mapping[str, Any]) -> str:
    """The report as a terminal reads it: the summary, a line per partition, every breach, the
    partitions with unread data."""
    parts = report["partitions"]
    if not parts:
        none = "no deletions recorded (no topic with gdpr.deletion.sla.ms has deleted anything)"
        return "\n".join([none + unread_clause(report), *_unread_lines(report)])
    overall, covered = report["summary"]["overall"], report["period"]
    lines = [
        f"{overall['met']} of {overall['total']} met ({overall['percent']['met']:.1f} %), "
        f"{overall['pending']} pending, {overall['breached']} breached; deletions and "
        f"overwrites from {covered['first']} to {covered['last']}{unread_clause(report)}",
        "",
        f"{'partition':<24} {'sla':>10} {'pending':>7} {'met':>5} {'breached':>8} "
        f"{'p50':>10} {'p99':>10} {'max':>10}  oldest pending (deadline)",
    ]
    for p in parts:
        t = p["time_to_erasure_ms"] or {}
        oldest = p["oldest_pending"]
        lines.append(
            f"{p['topic'] + '-' + str(p['partition']):<24} {_dur(p['sla_ms']):>10} "
            f"{p['pending']:>7} {p['met']:>5} {p['breached']:>8} {_dur(t.get('p50')):>10} "
            f"{_dur(t.get('p99')):>10} {_dur(t.get('max')):>10}  "
            + ("-" if oldest is None else f"offset {oldest['offset']} ({oldest['deadline']})")
        )
    if breaches := breached(report):
        lines.append("")
        lines.append("breaches:")
        for r in breaches:
            what = f"offset {r['offset']}" if "offset" in r else f"round {r['round']}"
            why = f" ({r['error']})" if r.get("error") else ""
            lines.append(
                f"  {r['topic']}-{r['partition']} {what}: deadline {r['deadline']}, stage "
                f"{r['breach_stage']}{why}"
            )
    lines += _unread_lines(report)
    for u in report["upstream"]:
        lines.append(f"upstream, not owned: {u['location']}: {u['note']}")
    return "\n".join(lines)


def unread_clause(report: Mapping[str, Any]) -> str:
    """What the summary line adds for source data not merged: its deletions are not counted
    above, so the line must not read as all clear ("" when there is none)."""
    unread = report.get("unread", ())
    if not unread:
        return ""
    late = sum(1 for p in unread if p["status"] == BREACHED)
    return (
        f"; not counted above: {len(unread)} partition(s) with source data not merged "
        f"({late} past the deadline, {len(unread) - late} unverified)"
    )


def _unread_lines(report: Mapping[str, Any]) -> list[str]:
    """A line per partition whose source data not merged is unverified or breached."""
    unread = report.get("unread", ())
    if not unread:
        return []
    lines = ["", "source data not merged (deletions in it are not seen, nor erased):"]
    for p in unread:
        since = p["unread_since"] or "an unknown time"
        what = "unread data past its deadline" if p["status"] == BREACHED else p["status"]
        deadline = f", deadline {p['deadline']}" if p["deadline"] else ""
        lines.append(
            f"  {place(p)}: {what}: {p['segments']} segment(s) since "
            f"{since}{deadline}; oldest {p['location']}: {p['why']}"
        )
    return lines


def _dur(ms: int | None) -> str:
    return "-" if ms is None else duration(ms)
