"""The clock a command runs on: the system's, or one pinned by SEGCOMPACT_CLOCK_MS."""

from __future__ import annotations

import pytest

from segcompact.clock import CLOCK_VARIABLE, ManualClock, SystemClock, job_clock
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
