"""The SLA report's SVG charts as data: labelled axes, marks inside the plot, deadlines where they
belong, readable ticks. The browser test (tests/browser) checks what a person sees."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from segcompact.erasure import charts
from segcompact.erasure.charts import DAY, HOUR, MINUTE, SECOND, Point

T0 = 1_795_000_000_000
NS = "{http://www.w3.org/2000/svg}"
ORDER = [("seen", "noticed"), ("merged", "dropped"), ("purged", "purged"),
         ("materialized", "rewritten"), ("versions_removed", "old copies deleted"),
         ("vacuumed", "old files deleted")]  # fmt: skip


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{NS[1:-1]}" ', 1))


def texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iter(f"{NS}text") if t.get("class") == cls]


def plot_box(root: ET.Element) -> tuple[float, float, float, float]:
    """left, top, right, bottom of the plot: the ends of its two axis lines."""
    xs, ys = [], []
    for line in root.iter(f"{NS}line"):
        if line.get("class") == "axis":
            xs += [float(line.get("x1", 0)), float(line.get("x2", 0))]
            ys += [float(line.get("y1", 0)), float(line.get("y2", 0))]
    return min(xs), min(ys), max(xs), max(ys)


def test_time_to_erasure_has_labelled_axes_and_a_labelled_deadline() -> None:
    points = [Point(T0, 20 * MINUTE, False, "a"), Point(T0 + 30 * MINUTE, 70 * MINUTE, True, "b")]
    root = parse(charts.time_to_erasure(points, {"users": HOUR, "orders": HOUR, "x": 2 * HOUR}))
    assert texts(root, "axis-label") == [
        "when the value was deleted or replaced (UTC, from 2026-11-18)",
        "time to erasure",
    ]
    # Topics with the same deadline share one line; each line is labelled with its topics.
    assert sorted(texts(root, "sla-label")) == [
        "deadline of orders, users: 1 h",
        "deadline of x: 2 h",
    ]
    bottom = plot_box(root)[3]
    slas = [line for line in root.iter(f"{NS}line") if line.get("class") == "sla"]
    assert len(slas) == 2
    y_of = {float(s.get("y1", 0)) for s in slas}
    # y is linear from 0 at the bottom: 2 h is twice as far up as 1 h.
    lo, hi = sorted(y_of, reverse=True)
    assert abs((bottom - hi) - 2 * (bottom - lo)) < 0.2
    marks = list(root.iter(f"{NS}circle"))
    assert [m.get("class") for m in marks] == ["mark", "mark breached"]
    assert [m.find(f"{NS}title").text for m in marks] == ["a", "b"]  # type: ignore[union-attr]
    # The later deletion is to the right; the longer wait is higher up.
    (a, b) = [(float(m.get("cx", 0)), float(m.get("cy", 0))) for m in marks]
    assert a[0] < b[0] and a[1] > b[1]
    # The time axis: clock times, every tick label distinct.
    ticks = texts(root, "tick")
    assert "11:10" in ticks and "30 min" in ticks and "1 h" not in ticks  # y ticks in one unit


@given(
    st.lists(
        st.tuples(st.integers(0, 30 * DAY), st.integers(0, 10 * DAY), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    st.dictionaries(st.sampled_from(["users", "orders"]), st.integers(1, 10 * DAY)),
)
def test_every_mark_is_inside_the_plot(
    raw: list[tuple[int, int, bool]], deadlines: dict[str, int]
) -> None:
    points = [Point(T0 + at, took, bad, "p") for at, took, bad in raw]
    root = parse(charts.time_to_erasure(points, deadlines))
    left, top, right, bottom = plot_box(root)
    marks = list(root.iter(f"{NS}circle"))
    assert len(marks) == len(points)
    for m in marks:
        assert left <= float(m.get("cx", -1)) <= right
        assert top <= float(m.get("cy", -1)) <= bottom
    for line in root.iter(f"{NS}line"):
        if line.get("class") in ("sla", "grid"):
            for y in (float(line.get("y1", -1)), float(line.get("y2", -1))):
                assert top - 0.05 <= y <= bottom + 0.05
    assert 2 <= len(texts(root, "tick")) <= 2 * (charts.MAX_TICKS + 1)


def test_stage_chart_stacks_steps_on_a_time_axis() -> None:
    bars = [("users-0", {"seen": 10 * SECOND, "merged": 50 * SECOND, "vacuumed": 60 * SECOND}),
            ("orders-3", {"seen": 30 * SECOND})]  # fmt: skip
    root = parse(charts.stages(bars, ORDER))
    assert texts(root, "axis-label") == [
        "mean time since the deletion or overwrite (each step starts where the one before ended)"
    ]
    # Ticks at a readable step, all in its unit.
    assert texts(root, "tick") == ["0 s", "30 s", "60 s", "90 s", "120 s"]
    rects = list(root.iter(f"{NS}rect"))
    assert [r.find(f"{NS}title").text for r in rects] == [  # type: ignore[union-attr]
        "noticed: 10 s", "dropped: 50 s", "old files deleted: 1 min", "noticed: 30 s"
    ]  # fmt: skip
    x = [float(r.get("x", 0)) for r in rects]
    w = [float(r.get("width", 0)) for r in rects]
    # Stacked: each step starts where the one before ended, widths in proportion to time.
    assert abs(x[1] - (x[0] + w[0])) < 0.2 and abs(x[2] - (x[1] + w[1])) < 0.2
    assert abs(w[1] / w[0] - 5) < 0.05 and x[3] == x[0]


def test_ticks_are_readable_steps() -> None:
    assert charts.ticks(0, 10 * MINUTE) == (2 * MINUTE, [0, 120_000, 240_000, 360_000, 480_000,
                                                          600_000])  # fmt: skip
    step, values = charts.ticks(T0 + 1, T0 + 3 * HOUR)
    assert step == 30 * MINUTE and all(v % step == 0 for v in values) and values[0] > T0
    assert charts.duration_label(90 * MINUTE, HOUR) == "1.5 h"
    assert charts.time_label(T0, MINUTE, HOUR) == "11:06"
    assert charts.time_label(T0, HOUR, 2 * DAY) == "11-18 11:06"
    assert charts.time_label(T0, DAY, 30 * DAY) == "2026-11-18"
