"""What a poll did: per partition, and summed for the log line, the exit code and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from segcompact.ship.manifest import Entry


@dataclass(slots=True)
class PartitionResult:
    """What one poll did with one partition."""

    shipped: int = 0
    bytes: int = 0
    gaps: list[Entry] = field(default_factory=list)
    damaged: list[Entry] = field(default_factory=list)
    errors: int = 0
    waiting: list[tuple[int, int | None]] = field(default_factory=list)  # (size, modified ms)
    unknown: bool = False  # what waits could not be told
    elsewhere: bool = False  # another broker's shipper ships this partition


@dataclass(slots=True)
class PollResult:
    """What one poll did, summed over partitions."""

    partitions: int = 0
    elsewhere: int = 0  # partitions another broker's shipper ships
    shipped: int = 0
    bytes: int = 0
    gaps: int = 0
    damaged: int = 0
    errors: int = 0
    unknown: bool = False  # a directory could not be listed: what waits there is not known

    def line(self) -> str:
        return (
            f"shipped {self.shipped} segments ({self.bytes} bytes) of {self.partitions} "
            f"partitions ({self.elsewhere} more shipped from another log dir); "
            f"{self.gaps} gaps, {self.damaged} damaged, {self.errors} errors"
        )
