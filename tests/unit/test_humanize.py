"""Durations and times as people read them (``segcompact.humanize``)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.humanize import ago, duration, iso_time, size, until

_SIZES = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
_ORDER = ["d", "h", "m", "s"]


def _parse(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    parts = re.fullmatch(r"-?(\d+(?:d|h|m|s|ms))( \d+(?:d|h|m|s))?", text)
    assert parts, f"{text!r} is not a duration"
    total = 0
    for n, unit in re.findall(r"(\d+)(ms|d|h|m|s)", text):
        total += int(n) * _SIZES[unit]
    return sign * total


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0s"),
        (1, "1ms"),
        (999, "999ms"),
        (1000, "1s"),
        (45_000, "45s"),
        (60_000, "1m"),
        (90_500, "1m 30s"),
        (21_600_000, "6h"),
        (93_600_000, "1d 2h"),
        (86_400_000 + 59_000, "1d"),  # its second unit is hours: none
        (7 * 86_400_000, "7d"),
        (-45_000, "-45s"),
    ],
)
def test_duration_vectors(ms: int, text: str) -> None:
    assert duration(ms) == text


def test_until_and_ago() -> None:
    assert until(21_600_000) == "in 6h"
    assert until(0) == "now"
    assert until(-45_000) == "overdue by 45s"
    assert ago(93_600_000) == "1d 2h ago"
    assert ago(-1000) == "in 1s"


@given(st.integers(min_value=-(2**63), max_value=2**63))
def test_duration_is_its_two_largest_units_truncated(ms: int) -> None:
    text = duration(ms)
    shown = _parse(text)
    units = re.findall(r"\d+(ms|d|h|m|s)", text)
    assert len(units) in (1, 2)
    if units[0] == "ms" or ms == 0:
        assert shown == ms  # below a second: exact
        return
    first = _ORDER.index(units[0])
    assert abs(ms) >= _SIZES[units[0]]  # the largest unit is one the value reaches
    # Truncated, never rounded up: what is left out is less than the next unit below the
    # largest (whole seconds at the finest).
    step = _SIZES[_ORDER[min(first + 1, len(_ORDER) - 1)]]
    assert 0 <= abs(ms) - abs(shown) < step
    assert (shown < 0) == (ms < 0)


@given(st.data(), st.integers(min_value=0, max_value=2))
def test_values_of_two_adjacent_units_are_exact(data: st.DataObject, i: int) -> None:
    big, small = _ORDER[i], _ORDER[i + 1]
    most = 10**9 if i == 0 else _SIZES[_ORDER[i - 1]] // _SIZES[big] - 1  # below the next unit
    a = data.draw(st.integers(min_value=1, max_value=most))
    b = data.draw(st.integers(min_value=0, max_value=_SIZES[big] // _SIZES[small] - 1))
    text = duration(a * _SIZES[big] + b * _SIZES[small])
    assert text == f"{a}{big}" + (f" {b}{small}" if b else "")


@given(st.integers(min_value=-(2**40), max_value=2**40))
def test_until_names_the_direction(ms: int) -> None:
    text = until(ms)
    if ms > 0:
        assert text == f"in {duration(ms)}"
    elif ms < 0:
        assert text == f"overdue by {duration(-ms)}"
    else:
        assert text == "now"


@given(st.integers(min_value=0, max_value=253_402_300_799_999))  # up to 9999-12-31
def test_iso_time_reads_back_to_the_millisecond(ms: int) -> None:
    text = iso_time(ms)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text)
    back = datetime.fromisoformat(text) - datetime.fromisoformat("1970-01-01T00:00:00Z")
    assert back // timedelta(milliseconds=1) == ms


def test_iso_time_vector() -> None:
    assert iso_time(1_795_854_950_740) == "2026-11-28T08:35:50.740Z"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (1_269_000, "1.21 MiB"),
        (99_990, "97.6 KiB"),
        (1_048_575, "1.00 MiB"),  # not "1024 KiB"
        (1_047_552, "1023 KiB"),
    ],
)
def test_size_vectors(n: int, text: str) -> None:
    assert size(n) == text


@given(st.integers(min_value=0, max_value=2**70))
def test_size_has_three_significant_figures_and_reads_back(n: int) -> None:
    value, unit = size(n).split()
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    scale = 1024 ** units.index(unit)
    if unit == "B":
        assert int(value) == n
        return
    assert len(value.replace(".", "")) == 3 or float(value) >= 1000 or unit == "EiB"
    assert float(value) < 1024 or unit == "EiB"  # else the next unit
    assert abs(float(value) * scale - n) <= 0.005 * n + scale / 100
