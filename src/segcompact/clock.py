"""Where segcompact gets the time: an injectable clock, so horizons and lags are testable."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass
class ManualClock:
    """A clock that moves only when told to (tests, replays)."""

    current_ms: int = 0

    def now_ms(self) -> int:
        return self.current_ms

    def advance(self, ms: int) -> None:
        self.current_ms += ms


def epoch_ms(value: datetime | None) -> int | None:
    """A timestamp read from a table as epoch milliseconds (None stays None)."""
    return None if value is None else int(value.timestamp() * 1000)
