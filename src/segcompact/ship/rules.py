"""What the shipper does with one partition directory: the pure rules, from its file names and
what the manifest already holds.

A segment is **rolled** once a segment with a higher base offset exists beside it with its
``.log``, ``.index`` and ``.timeindex``: the broker has moved on, and never appends to it again.
The segment with the highest base offset is the active one and is never rolled. Segments are
shipped in offset order, each at most once: the manifest's entries cover offsets
``[start, end)`` one after the other, ``end`` being the next segment's base offset, and a
segment below the manifest's end is done (a rewrite by the broker's cleaner holds a subset of
its records and is left alone). Offsets between the manifest's end and the next segment there
are a **gap**: the broker deleted that segment (retention, ``delete-records``, a cleaner that
merged it into one already shipped) before it was shipped.

The broker's other files (``.txnindex``, ``.snapshot``, ``leader-epoch-checkpoint``,
``*.deleted``, ``*.cleaned``, ``*.swap``) are never shipped. While a ``.swap`` file is there the
cleaner is between renames (the old segment already ``.deleted``, the new one not yet named):
nothing is decided until it is gone, lest a segment mid-swap be taken for a deleted one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from segcompact.format.logdir import parse_segment_file

_SWAP = re.compile(r"^[0-9]{20}\.[a-z]+\.swap$")
_ROLL_FILES = frozenset({".log", ".index", ".timeindex"})


@dataclass(frozen=True, slots=True)
class Listing:
    """A partition directory's segments, from its file names."""

    logs: tuple[int, ...]  # base offsets with a .log, ascending
    complete: frozenset[int]  # base offsets with .log, .index and .timeindex
    swapping: bool  # a .swap file: the cleaner is between renames

    @classmethod
    def of(cls, names: Iterable[str]) -> Listing:
        kinds: dict[int, set[str]] = {}
        swapping = False
        for name in names:
            named = parse_segment_file(name)
            if named is not None and named[1] in _ROLL_FILES:
                kinds.setdefault(named[0], set()).add(named[1])
            elif _SWAP.match(name):
                swapping = True
        logs = tuple(sorted(b for b, k in kinds.items() if ".log" in k))
        complete = frozenset(b for b, k in kinds.items() if k >= _ROLL_FILES)
        return cls(logs, complete, swapping)

    def rolled(self) -> list[int]:
        """The base offsets of the rolled segments, ascending."""
        if not self.complete:
            return []
        newest = max(self.complete)
        return [b for b in self.logs if b < newest]

    def after(self, base: int) -> int | None:
        """The base offset of the segment after ``base``; None when it is the last."""
        return next((b for b in self.logs if b > base), None)


@dataclass(frozen=True, slots=True)
class Ship:
    """Ship the segment at ``start``; the next segment starts at ``end``."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Gap:
    """Offsets ``[start, end)`` that were deleted before they were shipped."""

    start: int
    end: int


Step = Ship | Gap


def plan(listing: Listing, shipped_to: int | None, committed: int | None = None) -> list[Step]:
    """What to do, in offset order, given that the manifest covers offsets up to
    ``shipped_to`` (None: nothing shipped yet, so offsets before the first segment seen are
    no gap: they were gone before the shipper came). A segment ships once every offset in it
    is below ``committed``, the partition's high watermark (None: not known, not waited for):
    records above it may still be truncated away by a change of leader."""
    if listing.swapping:
        return []
    rolled = set(listing.rolled())
    steps: list[Step] = []
    position = shipped_to
    for base in listing.logs:
        if position is not None and base < position:
            continue  # shipped already (or a cleaner's rewrite of one that was)
        if position is not None and base > position:
            steps.append(Gap(position, base))
        if base not in rolled:
            break  # the active segment, or one whose successor is not complete yet
        end = listing.after(base)
        assert end is not None  # a rolled segment has a newer one
        if committed is not None and end > committed:
            break  # not all committed yet
        steps.append(Ship(base, end))
        position = end
    return steps


def high_watermarks(text: str) -> dict[tuple[str, int], int]:
    """The partitions' high watermarks from a broker's ``replication-offset-checkpoint``
    (Kafka's ``OffsetCheckpointFile``: a version line ``0``, a count line, then ``<topic>
    <partition> <offset>`` a line; empty as the broker creates it, before its first
    checkpoint); ValueError for anything else."""
    lines = text.splitlines()
    if not lines:
        return {}
    if len(lines) < 2 or lines[0].strip() != "0":
        raise ValueError("expected version 0 and a count on its first two lines")
    count = int(lines[1])
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != count or any(len(e) != 3 for e in entries):
        raise ValueError(f"expected {count} lines of <topic> <partition> <offset>")
    return {(topic, int(partition)): int(offset) for topic, partition, offset in entries}


def went_back(listing: Listing, shipped_to: int | None) -> bool:
    """Whether the partition's log now ends below what was shipped: every segment, the active
    one too, starts below the manifest's end. A log never goes back; a topic deleted and
    created again under its name, or a log truncated below what was shipped, does. Nothing
    new would ever be shipped (every segment is below the manifest's end): it is an error to
    say, not a state to plan in."""
    return shipped_to is not None and bool(listing.logs) and listing.logs[-1] < shipped_to


@dataclass(frozen=True, slots=True)
class TopicSelection:
    """The topics to ship: by name, or matched whole by a regular expression (as Kafka
    Connect's ``topics`` and ``topics.regex``)."""

    names: frozenset[str] = frozenset()
    pattern: re.Pattern[str] | None = None

    def __contains__(self, topic: object) -> bool:
        if not isinstance(topic, str):
            return False
        return topic in self.names or (
            self.pattern is not None and self.pattern.fullmatch(topic) is not None
        )
