"""``segcompact sla --format html``: the deletion SLA report as one self-contained HTML page.

This module owns only the rendering: it takes the object ``--format json`` prints and returns a
page whose charts are inline SVG drawn here, so it opens offline, from a mail attachment or an
artifact store, with no script and nothing fetched. Building the report is done elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from html import escape
from typing import Any

from segcompact.erasure.schedule import STAGES

_COLOURS = ("#4e79a7", "#f28e2b", "#76b7b2", "#59a14f", "#edc948", "#b07aa1")
_RED, _GREEN = "#d62728", "#2ca02c"
# Belt and braces: should a report string ever slip past escaping, the page still loads nothing
# and runs nothing.
_CSP = "default-src 'none'; style-src 'unsafe-inline'"
_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3} td.num{text-align:right}
.breached{color:#d62728;font-weight:600} .empty{color:#666;font-style:italic}
svg{display:block;max-width:100%;height:auto;background:#fafafa;border:1px solid #ddd}
svg text{font:11px sans-serif;fill:#333}
.legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _dur(ms: float | None) -> str:
    if ms is None:
        return "—"
    s = ms / 1000
    if s < 1:
        return f"{ms:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    if s < 86400:
        return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"
    return f"{int(s // 86400)} d {int(s % 86400 // 3600)} h"


def _ms_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    # fromisoformat reads the trailing "Z" from Python 3.11 on.
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000


def _key(row: Mapping[str, Any]) -> tuple[str, int]:
    return (str(row.get("topic")), int(row.get("partition") or 0))


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], row_class: str = "") -> str:
    cls = f' class="{row_class}"' if row_class else ""
    body = "".join(f"<tr{cls}>" + "".join(cells) + "</tr>" for cells in rows)
    return "<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr>{body}</table>"


def _td(value: Any, num: bool = False, breached: bool = False) -> str:
    cls = " ".join(c for c, on in (("num", num), ("breached", breached)) if on)
    return f'<td class="{cls}">{_e(value)}</td>' if cls else f"<td>{_e(value)}</td>"


def _over(ms: float | None, sla: float | None) -> bool:
    return ms is not None and sla is not None and ms > sla


def _summary(partitions: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for p in partitions:
        sla, oldest = p.get("sla_ms"), p.get("oldest_pending")
        tte = p.get("time_to_erasure_ms") or {}
        cells = [_td(p.get("topic")), _td(p.get("partition"), num=True), _td(_dur(sla), num=True)]
        cells += [_td(p.get(k, 0), num=True) for k in ("pending", "met")]
        cells.append(_td(p.get("breached", 0), num=True, breached=bool(p.get("breached"))))
        cells += [
            _td(_dur(tte.get(q)), num=True, breached=_over(tte.get(q), sla))
            for q in ("p50", "p99", "max")
        ]
        if oldest:
            cells.append(
                _td(f"{str(oldest.get('key_hash'))[:12]}… @ offset {oldest.get('offset')}")
            )
            cells.append(_td(oldest.get("deadline")))
        else:
            cells += [_td("—"), _td("—")]
        rows.append(cells)
    head = "topic|partition|SLA|pending|met|breached|p50|p99|max|oldest pending|its deadline"
    return _table(head.split("|"), rows)


def _rows(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*(report.get("deletions") or []), *(report.get("overwrites") or [])]


def _completed(report: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], float]]:
    """Every completed deletion and overwrite round with its time to erasure, by partition."""
    out = []
    for row in _rows(report):
        # An overwrite round erases values appended over a span: its oldest value waited longest,
        # and that wait is the one the SLA is about.
        ms = _ms_between(
            row.get("appended_at") or row.get("appended_from"), row.get("completed_at")
        )
        if ms is not None:
            out.append((row, ms))
    return sorted(out, key=lambda r: (_key(r[0]), r[0].get("completed_at") or ""))


def _tte_chart(report: Mapping[str, Any], slas: Mapping[tuple[str, int], float]) -> str:
    rows = _completed(report)
    if not rows:
        return '<p class="empty">No deletion or overwrite round has completed yet.</p>'
    width, height, left, top, bottom = 900, 300, 70, 15, 40
    peak = max([ms for _, ms in rows] + [slas.get(_key(r), 0) for r, _ in rows]) or 1.0
    top_ms = peak * 1.1  # headroom so the highest mark is not cut by the frame
    step = (width - left - 20) / len(rows)

    def y(ms: float) -> float:
        return top + (height - top - bottom) * (1 - ms / top_ms)

    parts = [f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - 10}" y2="{y(0):.1f}" stroke="#999"/>']
    for tick in (peak / 2, peak):
        parts.append(
            f'<text x="{left - 5}" y="{y(tick) + 4:.1f}" text-anchor="end">{_e(_dur(tick))}</text>'
        )
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (row, _) in enumerate(rows):
        groups.setdefault(_key(row), []).append(i)
    for key, idx in groups.items():
        x0, x1 = left + idx[0] * step, left + (idx[-1] + 1) * step
        if key in slas:  # one SLA line per partition: partitions may have different SLAs
            parts.append(
                f'<line class="sla" x1="{x0:.1f}" x2="{x1:.1f}" y1="{y(slas[key]):.1f}" '
                f'y2="{y(slas[key]):.1f}" stroke="{_RED}" stroke-dasharray="5,3"/>'
            )
        parts.append(
            f'<text x="{(x0 + x1) / 2:.1f}" y="{height - bottom + 15}" '
            f'text-anchor="middle">{_e(key[0])}-{key[1]}</text>'
        )
    for i, (row, ms) in enumerate(rows):
        bad = row.get("status") == "breached"
        what = f"offset {row['offset']}" if "offset" in row else "overwrite round"
        parts.append(
            f'<circle class="mark{" breached" if bad else ""}" cx="{left + (i + 0.5) * step:.1f}" '
            f'cy="{y(ms):.1f}" r="{7 if bad else 5}" fill="{_RED if bad else _GREEN}">'
            f"<title>{_e(row.get('topic'))}-{_e(row.get('partition'))} {_e(what)}: "
            f"{_e(_dur(ms))} ({_e(row.get('status'))})</title></circle>"
        )
    return (
        f'<svg id="tte-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="time to erasure">{"".join(parts)}</svg>'
    )


def _stage_chart(partitions: Sequence[Mapping[str, Any]]) -> str:
    bars = [(p, p.get("stage_ms") or {}) for p in partitions]
    bars = [(p, st) for p, st in bars if any(st.get(s) for s in STAGES)]
    if not bars:
        return '<p class="empty">No stage durations yet.</p>'
    width, left, bar_h, gap = 900, 140, 22, 10
    height = len(bars) * (bar_h + gap) + gap
    longest = max(sum(float(st.get(s) or 0) for s in STAGES) for _, st in bars) or 1
    parts = []
    for n, (p, st) in enumerate(bars):
        y, x = gap + n * (bar_h + gap), float(left)
        parts.append(
            f'<text x="{left - 6}" y="{y + bar_h * 0.7:.1f}" text-anchor="end">'
            f"{_e(p.get('topic'))}-{_e(p.get('partition'))}</text>"
        )
        for stage, colour in zip(STAGES, _COLOURS, strict=True):
            ms = float(st.get(stage) or 0)
            # A stage of milliseconds beside one of minutes still gets a sliver to hover.
            w = max((width - left - 20) * ms / longest, 2.0) if ms > 0 else 0.0
            if w > 0:
                parts.append(
                    f'<rect class="stage" x="{x:.1f}" y="{y}" width="{w:.1f}" '
                    f'height="{bar_h}" fill="{colour}"><title>{stage}: '
                    f"{_e(_dur(st.get(stage)))}</title></rect>"
                )
                x += w
    legend = "".join(
        f'<span style="background:{c}"></span>{s}' for s, c in zip(STAGES, _COLOURS, strict=True)
    )
    return (
        f'<svg id="stage-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="mean stage durations">{"".join(parts)}'
        f'</svg><p class="legend">{legend}</p>'
    )


def _breaches(report: Mapping[str, Any]) -> str:
    rows = []
    for row in _rows(report):
        if row.get("status") != "breached":
            continue
        key = f"{str(row['key_hash'])[:12]}…" if row.get("key_hash") else "(overwrite round)"
        rows.append(
            [
                _td(row.get("topic")),
                _td(row.get("partition"), num=True),
                _td(key),
                _td(row.get("offset", "—"), num=True),
                _td(row.get("deadline")),
                _td(row.get("completed_at") or "not yet"),
                _td(row.get("breach_stage")),
            ]
        )
    if not rows:
        return '<p class="empty">No breach.</p>'
    head = ("topic", "partition", "key hash", "offset", "deadline", "completed", "breach stage")
    return _table(head, rows, row_class="breached")


def render_html(report: Mapping[str, Any]) -> str:
    """One self-contained HTML page (no external URLs, no network, no JS libraries) of ``report``,
    the object that ``segcompact sla --format json`` prints."""
    partitions = list(report.get("partitions") or [])
    slas = {_key(p): float(p["sla_ms"]) for p in partitions if p.get("sla_ms") is not None}
    upstream = report.get("upstream") or []
    body = [f"<h1>Deletion SLA</h1><p>Generated at {_e(report.get('generated_at'))}</p>"]
    if not (partitions or report.get("deletions") or report.get("overwrites")):
        body.append(
            '<p class="empty" id="nothing">Nothing to report: no partition has a '
            "deletion SLA and no deletion or overwrite was recorded.</p>"
        )
    else:
        body += [
            "<h2>Partitions</h2>",
            _summary(partitions),
            "<h2>Time to erasure</h2><p>Each completed deletion and overwrite round; the dashed "
            "line is its partition's SLA, red marks are breaches.</p>",
            _tte_chart(report, slas),
            "<h2>Mean time in each stage</h2>",
            _stage_chart(partitions),
            "<h2>Breaches</h2>",
            _breaches(report),
        ]
    items = "".join(
        f"<li><code>{_e(u.get('location'))}</code>: {_e(u.get('note'))}</li>" for u in upstream
    )
    body.append(f"<h2>Upstream copies</h2><ul>{items}</ul>" if items else "")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>segcompact deletion SLA</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
