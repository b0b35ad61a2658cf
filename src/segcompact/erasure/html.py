"""``segcompact sla --format html``: the deletion-SLA report as one self-contained HTML page.

This module owns the page: it takes the object ``--format json`` prints and lays out its
summary, period and scope, the charts (inline SVG from :mod:`segcompact.erasure.charts`, so the
page opens offline, from a mail attachment or an artifact store, with no script and nothing
fetched), the partitions, the missed deadlines, what the job does not own, and a glossary.
Building the report is done elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from segcompact.erasure import charts
from segcompact.erasure.glossary import GLOSSARY, STAGE_WORDS, STATUS_WORDS
from segcompact.erasure.report import unread_clause
from segcompact.erasure.schedule import STAGES

# Belt and braces: should a report string ever slip past escaping, the page still loads nothing
# and runs nothing.
_CSP = "default-src 'none'; style-src 'unsafe-inline'"
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:960px;color:#222;padding:0 1em}
h1{margin-bottom:.2em} h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right}
.breached{color:#d62728;font-weight:600} .empty{color:#666;font-style:italic}
#headline{font-size:1.25em;margin:.6em 0}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em} dt{font-weight:600}
svg{display:block;max-width:100%;height:auto;background:#fcfcfc;border:1px solid #ddd}
svg text{font:12px sans-serif;fill:#333} svg .axis-label{font-weight:600}
svg .sla-label{fill:#d62728;font-weight:600} svg .grid{stroke:#e4e4e4} svg .axis{stroke:#666}
.legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}
@page{size:A4;margin:1.5cm}
@media print{body{margin:0;max-width:none;font-size:11px} h2{break-after:avoid}
svg,tr,dd{break-inside:avoid} th,td{padding:.15em .35em}}
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _dur(ms: float | None) -> str:
    if ms is None:
        return "—"
    s = ms / 1000
    if s < 1:
        return f"{ms:.0f} ms"
    for big, small, unit, sub in (
        (86400, 3600, "d", "h"),
        (3600, 60, "h", "min"),
        (60, 1, "min", "s"),
    ):
        if s >= big:
            whole, rest = int(s // big), int(s % big // small)
            return f"{whole} {unit} {rest} {sub}" if rest else f"{whole} {unit}"
    return f"{s:.1f} s"


def _when(iso: str | None) -> str | None:
    """An ISO-8601 time of the report as a person reads it: ``2026-11-23 08:00:00 UTC``."""
    return None if not iso else iso.replace("T", " ").split(".")[0].removesuffix("Z") + " UTC"


def _ms(iso: str | None) -> int | None:
    # fromisoformat reads the trailing "Z" from Python 3.11 on.
    return None if not iso else int(datetime.fromisoformat(iso).timestamp() * 1000)


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], row_class: str = "") -> str:
    cls = f' class="{row_class}"' if row_class else ""
    body = "".join(f"<tr{cls}>" + "".join(cells) + "</tr>" for cells in rows)
    return "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + f"</tr>{body}</table>"


def _td(value: Any, num: bool = False, breached: bool = False) -> str:
    cls = " ".join(c for c, on in (("num", num), ("breached", breached)) if on)
    return f'<td class="{cls}">{_e(value)}</td>' if cls else f"<td>{_e(value)}</td>"


def _rows(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*(report.get("deletions") or []), *(report.get("overwrites") or [])]


def _count(tally: Mapping[str, Any], status: str) -> str:
    return f"{tally.get(status, 0)} ({tally.get('percent', {}).get(status, 0.0):.1f} %)"


def _summary(summary: Mapping[str, Any], unread: str) -> str:
    overall = summary.get("overall") or {}
    headline = (
        f'<p id="headline"><strong>{overall.get("met", 0)} of {overall.get("total", 0)}</strong>'
        f" erasures met their deadline ({overall.get('percent', {}).get('met', 0.0):.1f} %); "
        f"{overall.get('pending', 0)} pending, "
        f'<span class="{"breached" if overall.get("breached") else ""}">'
        f"{overall.get('breached', 0)} missed</span>{_e(unread)}.</p>"
    )
    kinds = summary.get("by_kind") or {}
    rows = [
        [_td(label), _td("")]
        + [_td(_count(t, s), num=True, breached=s == "breached" and bool(t.get(s)))
           for s in STATUS_WORDS]
        + [_td(t.get("total", 0), num=True)]
        for label, t in (
            ("deletions asked for", kinds.get("deletion") or {}),
            ("values replaced (erasure rounds)", kinds.get("overwrite") or {}),
        )
    ]  # fmt: skip
    for t in summary.get("by_topic") or []:
        rows.append(
            [_td(f"topic {t.get('topic')}"), _td(_dur(t.get("sla_ms")), num=True)]
            + [
                _td(_count(t, s), num=True, breached=s == "breached" and bool(t.get(s)))
                for s in STATUS_WORDS
            ]
            + [_td(t.get("total", 0), num=True)]
        )
    head = ["", "deadline", *STATUS_WORDS.values(), "total"]
    return headline + _table(head, rows)


def _period_and_scope(report: Mapping[str, Any]) -> str:
    period, scope = report.get("period") or {}, report.get("scope") or {}
    items = [
        ("First deletion or overwrite covered", _when(period.get("first")) or "none yet"),
        ("Last deletion or overwrite covered", _when(period.get("last")) or "none yet"),
        ("Report made at", _when(report.get("generated_at"))),
        ("Job configuration", scope.get("config")),
        ("Kafka logs read", ", ".join(scope.get("sources") or []) or None),
        ("Tables (current data, ledger)",
         ", ".join(x for x in (scope.get("state_table"), scope.get("ledger_table")) if x)),
        ("Copies written for Kafka", scope.get("output")),
        ("Progress checkpoint", scope.get("checkpoint")),
    ]  # fmt: skip
    slas = [
        f"{'every other topic' if t['topic'] == '*' else t['topic']}: {_dur(t['sla_ms'])}"
        for t in scope.get("topics") or []
    ]
    items.append(("Topics with a deadline", "; ".join(slas) or "none"))
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v or '—')}</dd>" for k, v in items) + "</dl>"


def _tte_chart(report: Mapping[str, Any]) -> str:
    points = []
    for row in _rows(report):
        # An overwrite round erases values replaced over a span: its oldest value waited
        # longest, and that wait is the one the deadline is about.
        at = _ms(row.get("appended_at") or row.get("appended_from"))
        done = _ms(row.get("completed_at"))
        if at is None or done is None:
            continue
        what = f"offset {row['offset']}" if row.get("offset") is not None else "erasure round"
        status = STATUS_WORDS.get(str(row.get("status")), str(row.get("status")))
        title = f"{row.get('topic')}-{row.get('partition')} {what}: {_dur(done - at)} ({status})"
        points.append(charts.Point(at, done - at, row.get("status") == "breached", title))
    if not points:
        return '<p class="empty">No deletion or erasure round has completed yet.</p>'
    deadlines = {
        str(t["topic"]): int(t["sla_ms"])
        for t in (report.get("summary") or {}).get("by_topic") or []
        if t.get("sla_ms") is not None
    }
    return charts.time_to_erasure(points, deadlines)


def _stage_chart(partitions: Sequence[Mapping[str, Any]]) -> str:
    bars = [(f"{p.get('topic')}-{p.get('partition')}", p.get("stage_ms") or {}) for p in partitions]
    bars = [(label, st) for label, st in bars if any(st.get(s) for s in STAGES)]
    if not bars:
        return '<p class="empty">No step has been timed yet.</p>'
    legend = "".join(
        f'<span style="background:{c}"></span>{_e(STAGE_WORDS[s])}'
        for s, c in zip(STAGES, charts.STAGE_COLOURS, strict=True)
    )
    order = [(s, STAGE_WORDS[s]) for s in STAGES]
    return charts.stages(bars, order) + f'<p class="legend">{legend}</p>'


def _partitions(partitions: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for p in partitions:
        sla, oldest = p.get("sla_ms"), p.get("oldest_pending")
        tte = p.get("time_to_erasure_ms") or {}
        cells = [_td(p.get("topic")), _td(p.get("partition"), num=True), _td(_dur(sla), num=True)]
        cells += [_td(p.get(k, 0), num=True, breached=k == "breached" and bool(p.get(k)))
                  for k in STATUS_WORDS]  # fmt: skip
        cells += [
            _td(_dur(tte.get(q)), num=True, breached=tte.get(q) is not None and sla is not None
                and tte[q] > sla)
            for q in ("p50", "p99", "max")
        ]  # fmt: skip
        cells.append(
            _td(
                f"offset {oldest.get('offset')}, due {_when(oldest.get('deadline'))}"
                if oldest
                else "—"
            )
        )
        rows.append(cells)
    head = ["topic", "partition", "deadline", *STATUS_WORDS.values(), "median", "99th pct.",
            "longest", "oldest pending deletion"]  # fmt: skip
    return _table(head, rows)


def _missed(report: Mapping[str, Any]) -> str:
    rows = []
    for row in _rows(report):
        if row.get("status") != "breached":
            continue
        key = f"{str(row['key_hash'])[:12]}…" if row.get("key_hash") else "(erasure round)"
        step = STAGE_WORDS.get(str(row.get("breach_stage")), row.get("breach_stage"))
        rows.append(
            [_td(row.get("topic")), _td(row.get("partition"), num=True), _td(key),
             _td(row.get("offset", "—"), num=True), _td(_when(row.get("deadline"))),
             _td(_when(row.get("completed_at")) or "not yet"), _td(step),
             _td(row.get("error") or "")]
        )  # fmt: skip
    if not rows:
        return '<p class="empty">No deadline was missed.</p>'
    head = ("topic", "partition", "key hash", "offset", "deadline", "erased at", "late step",
            "error")  # fmt: skip
    return _table(head, rows, row_class="breached")


def _unread(report: Mapping[str, Any]) -> str:
    """The partitions whose source data the job has not read yet: a deletion in it is not
    known, so the report above cannot vouch for it."""
    rows = [
        [_td("any" if u["topic"] is None else u["topic"]),
         _td("any" if u["partition"] is None else u["partition"], num=True),
         _td("past its deadline" if u["status"] == "breached" else "unverified",
             breached=u["status"] == "breached"),
         _td(_when(u.get("unread_since")) or "unknown"), _td(_when(u.get("deadline")) or "—"),
         _td(u["segments"], num=True), _td(f"{u['location']}: {u['why']}")]
        for u in report.get("unread") or []
    ]  # fmt: skip
    head = ("topic", "partition", "status", "unread since", "deadline", "segments", "oldest")
    return (
        "<p>Data the job has not read yet: a deletion in it is not in the ledger, so nothing "
        "above can vouch for it. Unverified from a quarter of the deadline, missed past it.</p>"
        + _table(head, rows)
    )


def _not_owned(report: Mapping[str, Any]) -> str:
    found = "".join(
        f"<li><code>{_e(u.get('location'))}</code>: {_e(u.get('note'))}</li>"
        for u in report.get("upstream") or []
    )
    general = "".join(
        f"<li><strong>{_e(n.get('what'))}</strong>: {_e(n.get('note'))}</li>"
        for n in report.get("not_owned") or []
    )
    return (
        "<p>This job erases only what it writes. These copies are outside it and are "
        "erased, if at all, by their owners.</p>"
        + (f'<p>Found for the partitions above:</p><ul id="upstream">{found}</ul>' if found else "")
        + f"<ul>{general}</ul>"
    )


def _glossary() -> str:
    items = "".join(f"<dt>{_e(term)}</dt><dd>{_e(meaning)}</dd>" for term, meaning in GLOSSARY)
    return f'<dl id="glossary">{items}</dl>'


def render_html(report: Mapping[str, Any]) -> str:
    """One self-contained HTML page (no external URLs, no network, no JS libraries) of ``report``,
    the object that ``segcompact sla --format json`` prints."""
    partitions = list(report.get("partitions") or [])
    body = [
        "<h1>Deletion deadline (SLA) report</h1>"
        "<p>Whether every deleted or replaced value was physically erased from everything this "
        "job keeps within its topic's deadline, from the job's ledger.</p>"
    ]
    if not _rows(report):
        body.append(
            '<p class="empty" id="nothing">Nothing to report: no deletion or overwrite has been '
            "recorded for a topic with a deadline.</p>"
        )
    else:
        body += ["<h2>Summary</h2>", _summary(report.get("summary") or {}, unread_clause(report))]
    body += ["<h2>Reporting period and scope</h2>", _period_and_scope(report)]
    if _rows(report):
        body += [
            "<h2>Time to erasure</h2><p>Each completed erasure at the time its value was deleted "
            "or replaced, against how long erasure took; a dashed line is a topic's deadline; "
            "green marks met their own topic's deadline, red marks missed it.</p>",
            _tte_chart(report),
            "<h2>Time taken by each step</h2><p>For each partition, the mean time each step of an "
            "erasure took, one after the other from the deletion.</p>",
            _stage_chart(partitions),
            "<h2>By partition</h2>",
            _partitions(partitions),
            "<h2>Missed deadlines</h2>",
            _missed(report),
        ]
    if report.get("unread"):
        body += ['<h2 id="unread">Data not read yet</h2>', _unread(report)]
    body += ["<h2>What is not owned</h2>", _not_owned(report), "<h2>Glossary</h2>", _glossary()]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>segcompact deletion SLA report</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
