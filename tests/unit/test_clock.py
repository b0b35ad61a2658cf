"""The clock a command runs on: the system's, or one pinned by SEGCOMPACT_CLOCK_MS."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.clock import (
    CLOCK_VARIABLE,
    ManualClock,
    SystemClock,
    at_ms,
    epoch_ms,
    job_clock,
)
from segcompact.errors import ConfigError


def test_a_command_runs_on_the_system_clock_unless_pinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CLOCK_VARIABLE, raising=False)
    assert isinstance(job_clock(), SystemClock)
    monkeypatch.setenv(CLOCK_VARIABLE, "1060000")
    assert job_clock() == ManualClock(1_060_000)


@pytest.mark.parametrize("value", ["soon", "1.5", "2026-11-25"])
def test_a_pinned_time_that_is_not_epoch_milliseconds_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(CLOCK_VARIABLE, value)
    with pytest.raises(ConfigError) as info:
        job_clock()
    assert str(info.value) == (
        f"SEGCOMPACT_CLOCK_MS={value!r}: not a time (epoch milliseconds, an integer)"
    )


@given(st.integers(-(10**12), 4 * 10**12), st.integers(0, 999))
def test_a_time_and_its_epoch_milliseconds_convert_exactly(ms: int, us: int) -> None:
    at = at_ms(ms)
    assert epoch_ms(at) == ms
    assert epoch_ms(at + timedelta(microseconds=us)) == ms  # the millisecond it falls in
    assert epoch_ms(at.astimezone(timezone(timedelta(hours=-7)))) == ms
    assert epoch_ms(at.astimezone().replace(tzinfo=None)) == ms  # naive: local time
    assert epoch_ms(None) is None
