"""The SLA report's two charts as inline SVG: time to erasure over calendar time with each
deadline drawn and labelled, and the mean time of each step on a duration scale. Pure: numbers
(epoch or duration milliseconds) in, SVG text out, nothing fetched and no script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000
# Steps a person reads without arithmetic, for both axes.
STEPS = (
    1, 2, 5, 10, 20, 50, 100, 200, 500,
    SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND,
    MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
    HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
    DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 90 * DAY, 365 * DAY,
)  # fmt: skip
UNITS = ((DAY, "d"), (HOUR, "h"), (MINUTE, "min"), (SECOND, "s"), (1, "ms"))
MAX_TICKS = 8
GREEN, RED = "#2ca02c", "#d62728"
STAGE_COLOURS = ("#4e79a7", "#f28e2b", "#76b7b2", "#59a14f", "#edc948", "#b07aa1")


@dataclass(frozen=True, slots=True)
class Point:
    """One completed erasure: when its value was deleted or replaced, how long erasure took."""

    at_ms: int
    took_ms: int
    breached: bool
    title: str


@dataclass(frozen=True, slots=True)
class Frame:
    """A plot area in the SVG's units and the box of data it shows."""

    left: float
    top: float
    right: float
    bottom: float
    x0: float
    x1: float
    y0: float
    y1: float

    def x(self, value: float) -> float:
        return self.left + (self.right - self.left) * (value - self.x0) / (self.x1 - self.x0)

    def y(self, value: float) -> float:
        return self.bottom - (self.bottom - self.top) * (value - self.y0) / (self.y1 - self.y0)


def step_for(span: float) -> int:
    """The smallest readable step that cuts ``span`` into at most :data:`MAX_TICKS` pieces."""
    return next((s for s in STEPS if span / s <= MAX_TICKS), STEPS[-1])


def ticks(lo: float, hi: float) -> tuple[int, list[int]]:
    """The step and every multiple of it from ``lo`` to ``hi`` (both included when on one)."""
    step = step_for(hi - lo)
    first = -(-int(lo) // step) * step
    return step, list(range(first, int(hi) + 1, step))


def duration_label(value: int, step: int) -> str:
    """``value`` in the unit of ``step`` (every tick of an axis in one unit; a lone duration is
    its own step)."""
    size, unit = next(((size, unit) for size, unit in UNITS if step >= size), UNITS[-1])
    return f"{value / size:.4g} {unit}"


def time_label(value: int, step: int, span: float) -> str:
    at = datetime.fromtimestamp(value / 1000, tz=UTC)
    if step >= DAY:
        return at.strftime("%Y-%m-%d")
    clock = "%H:%M" if step >= MINUTE else "%H:%M:%S"
    return at.strftime(("%m-%d " if span >= DAY else "") + clock)


def _text(x: float, y: float, label: str, anchor: str = "middle", cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    c += f' fill="{RED}"' if cls == "sla-label" else ""
    return f'<text{c} x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(label)}</text>'


# Colours as attributes, not only CSS: an SVG renderer without the page's style sheet (a PDF
# converter, an image viewer) still draws light grid lines.
_STROKES = {"grid": "#e4e4e4", "axis": "#666", "sla": RED}


def _line(x1: float, y1: float, x2: float, y2: float, cls: str, extra: str = "") -> str:
    return (
        f'<line class="{cls}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
        f'stroke="{_STROKES[cls]}"{extra}/>'
    )


def _svg(ident: str, width: int, height: int, label: str, parts: Sequence[str]) -> str:
    return (
        f'<svg id="{ident}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}">{"".join(parts)}</svg>'
    )


def _duration_axis_x(f: Frame) -> list[str]:
    step, values = ticks(f.x0, f.x1)
    out = []
    for v in values:
        out.append(_line(f.x(v), f.top, f.x(v), f.bottom, "grid"))
        out.append(_text(f.x(v), f.bottom + 16, duration_label(v, step), cls="tick"))
    return out


def _duration_axis_y(f: Frame) -> list[str]:
    step, values = ticks(f.y0, f.y1)
    out = []
    for v in values:
        out.append(_line(f.left, f.y(v), f.right, f.y(v), "grid"))
        out.append(_text(f.left - 6, f.y(v) + 4, duration_label(v, step), "end", "tick"))
    return out


def time_to_erasure(points: Sequence[Point], deadlines: Mapping[str, int]) -> str:
    """Each point at (time deleted, time to erasure); a labelled dashed line at each deadline
    (``deadlines``: a label such as a topic name to its SLA in ms)."""
    width, height = 900, 360
    lo = min(p.at_ms for p in points)
    hi = max(p.at_ms for p in points)
    pad = max((hi - lo) * 0.05, MINUTE / 2)  # a single instant still gets a visible span
    peak = max([p.took_ms for p in points] + list(deadlines.values()))
    f = Frame(80, 20, width - 20, height - 60, lo - pad, hi + pad, 0, max(peak * 1.15, 1))
    parts = _duration_axis_y(f)
    step, values = ticks(f.x0, f.x1)
    for v in values:
        parts.append(_line(f.x(v), f.top, f.x(v), f.bottom, "grid"))
        parts.append(_text(f.x(v), f.bottom + 16, time_label(v, step, f.x1 - f.x0), cls="tick"))
    parts.append(_line(f.left, f.bottom, f.right, f.bottom, "axis"))
    parts.append(_line(f.left, f.top, f.left, f.bottom, "axis"))
    day = datetime.fromtimestamp(lo / 1000, tz=UTC).strftime("%Y-%m-%d")
    parts.append(
        _text((f.left + f.right) / 2, height - 14, f"when the value was deleted or replaced "
              f"(UTC, from {day})", cls="axis-label")
    )  # fmt: skip
    middle = (f.top + f.bottom) / 2
    parts.append(
        f'<text class="axis-label" x="18" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 18 {middle:.1f})">time to erasure</text>'
    )
    by_sla: dict[int, list[str]] = {}
    for name, sla in sorted(deadlines.items()):
        by_sla.setdefault(sla, []).append(name)
    for sla, names in by_sla.items():
        parts.append(_line(f.left, f.y(sla), f.right, f.y(sla), "sla", ' stroke-dasharray="6,4"'))
        label = f"deadline of {', '.join(names)}: {duration_label(sla, sla)}"
        parts.append(_text(f.right - 4, f.y(sla) - 5, label, "end", "sla-label"))
    for p in points:
        colour = RED if p.breached else GREEN
        parts.append(
            f'<circle class="mark{" breached" if p.breached else ""}" cx="{f.x(p.at_ms):.1f}" '
            f'cy="{f.y(p.took_ms):.1f}" r="{6 if p.breached else 4.5}" fill="{colour}" '
            f'fill-opacity="0.8"><title>{escape(p.title)}</title></circle>'
        )
    return _svg("tte-chart", width, height, "time to erasure over time", parts)


def stages(
    bars: Sequence[tuple[str, Mapping[str, float]]], order: Sequence[tuple[str, str]]
) -> str:
    """One stacked bar per label: each step's mean time after the one before it, in ``order``
    (each step's key and the name shown), on a labelled axis of time since the deletion."""
    width, left, bar_h, gap = 900, 150, 22, 12
    height = len(bars) * (bar_h + gap) + gap + 50
    longest = max(sum(st.get(s, 0) for s, _ in order) for _, st in bars) or 1
    f = Frame(left, gap, width - 30, height - 50, 0, longest * 1.05, 0, 1)
    parts = _duration_axis_x(f)
    parts.append(_line(f.left, f.bottom, f.right, f.bottom, "axis"))
    parts.append(
        _text((f.left + f.right) / 2, height - 12, "mean time since the deletion or overwrite "
              "(each step starts where the one before ended)", cls="axis-label")
    )  # fmt: skip
    for n, (label, st) in enumerate(bars):
        y, at = gap + n * (bar_h + gap), 0.0
        parts.append(_text(left - 6, y + bar_h * 0.7, label, "end"))
        for (stage, name), colour in zip(order, STAGE_COLOURS, strict=True):
            ms = float(st.get(stage, 0))
            if ms <= 0:
                continue
            x, w = f.x(at), f.x(at + ms) - f.x(at)
            parts.append(
                f'<rect class="stage" x="{x:.1f}" y="{y}" width="{max(w, 2.0):.1f}" '
                f'height="{bar_h}" fill="{colour}"><title>{escape(name)}: '
                f"{escape(duration_label(int(ms), int(ms)))}</title></rect>"
            )
            at += ms
    return _svg("stage-chart", width, height, "mean time of each step", parts)
