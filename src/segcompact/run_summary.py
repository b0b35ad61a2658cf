"""What a ``run --once`` did, in one line for a batch scheduler's log: segments, bytes, records
and keys read, partitions materialised, partitions uncleanable. Pure: the job hands it the
figures it already has (each micro-batch's partition stats, the materialiser's writes and its
read of the partitions table, the backlog's segment sizes), so that counting them costs no
Spark job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from segcompact.humanize import size

Partition = tuple[str, int]


@dataclass(slots=True)
class RunSummary:
    segments: int = 0
    bytes: int = 0  # the segment files' sizes (``Backlog.done``: damaged ones whole)
    records: int = 0  # those of readable batches
    partitions: set[Partition] = field(default_factory=set)  # those with a segment read
    keys: int | None = None  # the state's keys of ``partitions`` after the run; None: not read
    materialized: set[Partition] = field(default_factory=set)
    # Those whose damaged segment this run read (Kafka's cleaner marks them uncleanable then).
    found_uncleanable: dict[Partition, str] = field(default_factory=dict)
    # Every partition the partitions table says is uncleanable, after the run (None: not read).
    uncleanable: dict[Partition, str] | None = None

    def add_batch(self, stats: Iterable[Mapping[str, Any]]) -> None:
        """A micro-batch's per-partition stats (``partitions.batch_stats``); the bytes come
        from the backlog."""
        for r in stats:
            tp = (r["topic"], r["partition"])
            self.partitions.add(tp)
            self.segments += r["segments"] or 0
            self.records += r["records"] or 0
            if r["uncleanable_reason"] is not None:
                self.found_uncleanable.setdefault(tp, r["uncleanable_reason"])

    def line(self) -> str:
        keys = "keys held unknown" if self.keys is None else _n(self.keys, "key") + " held"
        parts = [
            f"{_n(self.segments, 'segment')} ({size(self.bytes)}) of "
            f"{_n(len(self.partitions), 'partition')} read: {_n(self.records, 'record')}, "
            f"{keys}",
            f"{_n(len(self.materialized), 'partition')} materialised",
            self._uncleanable(),
        ]
        return "run --once: " + "; ".join(parts)

    def _uncleanable(self) -> str:
        every = self.uncleanable
        if every is None:  # the upkeep did not run (a stop): only what this run found is known
            every = dict(self.found_uncleanable)
            total = f"{_n(len(every), 'partition')} found uncleanable"
        else:
            every = {**every, **self.found_uncleanable}
            total = f"{_n(len(every), 'partition')} uncleanable"
        if not every:
            return total
        named = ", ".join(
            f"{t}-{p}" + (" (new)" if (t, p) in self.found_uncleanable else "")
            for t, p in sorted(every)
        )
        return f"{total}: {named}"

    def failure(self) -> str | None:
        """The one line that makes the run fail: partitions that became uncleanable in it."""
        if not self.found_uncleanable:
            return None
        named = "; ".join(
            f"{t}-{p}: {reason}" for (t, p), reason in sorted(self.found_uncleanable.items())
        )
        return f"uncleanable since this run: {named}"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
