"""Source data segcompact has not merged, against the deletion SLA. Pure: no Spark, no I/O.

The ledger knows a deletion only once the merge has read it: a tombstone in a segment not read
yet (a stalled job's backlog, a Kafka active segment, a file that cannot be read) or past the
damage of an uncleanable partition is invisible to it, and every older value of its key stays.
So, for a topic with ``gdpr.deletion.sla.ms``, each such segment counts against the SLA from
its earliest append time (:class:`Unread`, gathered by :mod:`segcompact.unread`), and a
partition holding one is judged by its oldest (:func:`judge`):

- ``backlog``: younger than a quarter of the SLA, the wait every erasure starts with; not shown;
- ``unverified``: a quarter of the SLA or older, or of no readable time: the erasure of what
  it may hold cannot be shown in time;
- ``breached``: the SLA or older: unread data past its deadline.

``verify-erasure`` is stricter about one key: data of the partition not merged, of any age,
that may hold it makes its verdict ``unknown`` (:func:`findings`): a segment with a record of
the key, or one that cannot be read whole. A segment its scan read to the end without the key
cannot change the verdict (else a Kafka active segment, never merged, would leave no key
provable).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from segcompact.erasure.schedule import Status
from segcompact.erasure.verdict import UNMERGED

BACKLOG = "backlog"
UNVERIFIED = "unverified"
BREACHED = Status.BREACHED
# The topic and partition of data that cannot be tied to one (a source root not listed).
ANY_TOPIC, ANY_PARTITION = "*", -1


@dataclass(frozen=True, slots=True)
class Unread:
    """A source segment, or the part of one past its damage, that the merge has not read.

    ``since_ms``: its earliest append time (the first batch's timestamp or the file's
    modification time, the earlier), None when neither can be read. ``partial``: only part of
    it, or none, can be read (past a segment's damage, a file gone, a directory not listed):
    what it holds cannot be known."""

    topic: str
    partition: int
    location: str
    since_ms: int | None
    why: str
    partial: bool = False


@dataclass(frozen=True, slots=True)
class UnreadPartition:
    """One partition's unread data judged against its topic's SLA."""

    topic: str
    partition: int
    sla_ms: int
    status: str  # BACKLOG, UNVERIFIED or BREACHED
    since_ms: int | None  # the oldest known append time; None: none could be read
    deadline_ms: int | None
    segments: int
    oldest: Unread  # the segment it is judged by

    def as_json(self, iso: Callable[[int | None], str | None]) -> dict[str, Any]:
        anywhere = self.topic == ANY_TOPIC
        return {
            "topic": None if anywhere else self.topic,  # None: any topic's, any partition's
            "partition": None if anywhere else self.partition,
            "sla_ms": self.sla_ms,
            "status": self.status,
            "unread_since": iso(self.since_ms),
            "deadline": iso(self.deadline_ms),
            "segments": self.segments,
            "location": self.oldest.location,
            "why": self.oldest.why,
        }


def status_of(since_ms: int | None, sla_ms: int, now_ms: int) -> str:
    """A partition's status by its oldest unread append time (None: no time could be read)."""
    if since_ms is None:
        return UNVERIFIED  # nothing says it is young: never shown as in time
    age = now_ms - since_ms
    if age >= sla_ms:
        return BREACHED
    return UNVERIFIED if 4 * age >= sla_ms else BACKLOG


def judge(
    unread: Iterable[Unread], sla_of: Callable[[str], int | None], now_ms: int
) -> list[UnreadPartition]:
    """Per partition of a topic with an SLA, its unread data judged; sorted by partition. A
    topic without ``gdpr.deletion.sla.ms`` has no deadline to miss and is left out."""
    by_tp: dict[tuple[str, int], list[Unread]] = {}
    for u in unread:
        if sla_of(u.topic) is not None:
            by_tp.setdefault((u.topic, u.partition), []).append(u)
    out = []
    for (topic, partition), items in sorted(by_tp.items()):
        sla = sla_of(topic)
        assert sla is not None
        # The oldest: one without a time first (it may be older than any), then by time.
        oldest = min(items, key=lambda u: (u.since_ms is not None, u.since_ms or 0, u.location))
        since = oldest.since_ms
        out.append(
            UnreadPartition(
                topic=topic,
                partition=partition,
                sla_ms=sla,
                status=status_of(since, sla, now_ms),
                since_ms=since,
                deadline_ms=None if since is None else since + sla,
                segments=len(items),
                oldest=oldest,
            )
        )
    return out


def reported(parts: Sequence[UnreadPartition]) -> list[UnreadPartition]:
    """The partitions ``sla`` and ``health`` report: unverified or breached."""
    return [p for p in parts if p.status != BACKLOG]


def place(shown: Mapping[str, Any]) -> str:
    """``topic-partition`` of an :meth:`UnreadPartition.as_json`, or ``any partition``."""
    if shown["topic"] is None:
        return "any partition"
    return f"{shown['topic']}-{shown['partition']}"


def findings(
    unread: Iterable[Unread],
    topic: str,
    partition: int,
    iso: Callable[[int | None], str | None],
    cleared: Collection[str] = (),
) -> list[dict[str, Any]]:
    """``verify-erasure``'s findings for one partition's unread data (and what may be any
    partition's), of any age and any topic: each makes a verdict that would claim an absence
    ``unknown``. ``cleared``: segments the scan read to their end and found no record of the
    key in; unless ``partial``, such a segment cannot change the key's verdict and is left
    out (a Kafka active segment, never merged, would otherwise leave no key provable)."""
    return [
        {
            "kind": UNMERGED,
            "location": u.location,
            "offset": None,
            "detail": f"{u.why}, since {iso(u.since_ms) or 'an unknown time'}",
        }
        for u in sorted(unread, key=lambda u: u.location)
        if (u.topic, u.partition) in ((topic, partition), (ANY_TOPIC, ANY_PARTITION))
        and (u.partial or u.location not in cleared)
    ]
