"""What ``verify-erasure`` concludes about one key, and how it says it. Pure: no Spark, no I/O.

It is fed what was read (the key's newest row in the tables, its ledger rows) and what the
scan found (:mod:`segcompact.erasure.scan`), and gives one verdict:

- ``erased``: the key was deleted and no value of it is in anything segcompact owns;
- ``pending``: deleted (or with no current value), but a value is still held somewhere;
- ``live``: its current value is held by design, and the scan says whether older ones are too;
- ``never seen``: nothing of the key in the tables, the ledger or the output;
- ``unknown``: a location could not be read, or source data of the partition is not merged
  yet (:mod:`segcompact.erasure.unread`), and the answer would rest on it holding nothing.

A verdict is *proven* (``verify-erasure`` exits 0) only for ``erased`` and for ``live`` with
no older value: what someone asking about one person's data needs to hear. ``never seen`` is
not proven: a mistyped key, a key given as text that was written as other bytes, or the wrong
partition all look like it, and a script that closes a request on exit 0 must not close one
that matched nothing. ``unknown`` is never proven: nothing can be said about a file not read,
so it takes the place of any verdict that would claim an absence (``erased``, ``live`` with
nothing older, ``never seen``); one that lists copies stands, the unread file listed with them.
"""

from __future__ import annotations

import collections
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ERASED = "erased"
PENDING = "pending"
LIVE = "live"
NEVER_SEEN = "never seen"
UNKNOWN = "unknown"
VERDICTS = (ERASED, PENDING, LIVE, NEVER_SEEN, UNKNOWN)

UNREADABLE = "unreadable"  # a scan finding's kind: a file that could not be read or decoded
UNMERGED = "unmerged"  # a finding's kind: source data of the partition the merge has not read
_NOT_READ = (UNREADABLE, UNMERGED)
_WIDTH = 100

Row = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Held:
    """The newest row the tables hold of the key: its offset, and whether it is a tombstone."""

    offset: int
    tombstone: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    name: str
    why: str  # one sentence, with the times and offsets it rests on
    proven: bool  # verify-erasure's exit 0


def decide(current: Held | None, ledger: Sequence[Row], found: Sequence[Row], now: str) -> Verdict:
    """The verdict on a key from its newest row in the tables (``current``), its delete rows in
    the ledger (times as ISO strings like ``now``; a missing time is not done yet) and the
    scan's findings: every copy but the current row's (dicts with a ``kind``), older rows the
    tables still hold (a state row behind young ones) among them."""
    held = [f for f in found if f["kind"] not in _NOT_READ]
    unread = len(found) - len(held)
    deletions = sorted(ledger, key=lambda r: int(r["offset"]))
    newest = deletions[-1] if deletions else None
    if current is not None and not current.tombstone:
        value = f"its current value at offset {current.offset} is held by design"
        if held:
            return Verdict(LIVE, f"{value}; {_places(held, 'older copy', 'older copies')}", False)
        if unread:
            return _unknown(value, unread)
        return Verdict(LIVE, f"{value}; no older value in anything segcompact owns", True)
    if current is None and newest is None and not held:
        nothing = "nothing of this key in the tables, the ledger or the output"
        if unread:
            return _unknown(nothing, unread)
        check = "check the key, its bytes (--key-b64) and the partition"
        return Verdict(NEVER_SEEN, f"{nothing}: {check}", False)
    deleted = _deleted(current, newest)
    if held:
        return Verdict(
            PENDING, f"{deleted}; {_due(deletions, now)}; {_places(held, 'place', 'places')}", False
        )
    if unread:
        return _unknown(deleted, unread)
    nothing = f"{deleted}; no value of it in anything segcompact owns"
    if newest is not None and newest.get("completed_at") is None:
        # As `sla` says: erased once the ledger has seen every step of its erasure through.
        return Verdict(
            PENDING,
            f"{nothing}, but the ledger's erasure has not completed yet ({_due(deletions, now)})",
            False,
        )
    done = f"{nothing}; {_completed(newest)}"
    return Verdict(ERASED, done + _key_kept(current, deletions), True)


def _unknown(known: str, unread: int) -> Verdict:
    where = "1 location" if unread == 1 else f"{unread} locations"
    what = "it holds" if unread == 1 else "they hold"
    return Verdict(
        UNKNOWN,
        f"{known}; but {where} could not be read or {'is' if unread == 1 else 'are'} not "
        f"merged yet (listed below), and nothing can be proved about what {what}",
        False,
    )


def _places(held: Sequence[Row], one: str, many: str) -> str:
    if len(held) == 1:
        return f"1 {one} still holds a value, listed below"
    return f"{len(held)} {many} still hold a value, listed below"


def _deleted(current: Held | None, newest: Row | None) -> str:
    if newest is not None:
        return (
            f"deleted at {_at(newest, 'appended_at')} (its tombstone at offset {newest['offset']})"
        )
    if current is not None:
        return (
            f"deleted (its tombstone at offset {current.offset}); no ledger row (a topic "
            "without gdpr.deletion.sla.ms has none)"
        )
    return "no current value and no deletion on record"


def _due(deletions: Sequence[Row], now: str) -> str:
    """When the copies must be gone, by the ledger."""
    open_ = [r for r in deletions if r.get("completed_at") is None]
    deadlines = [str(r["deadline"]) for r in open_ if r.get("deadline") is not None]
    if open_ and not deadlines:
        return "its erasure is not completed, and the ledger has no deadline for it"
    if open_:
        deadline = min(deadlines)
        if deadline < now:  # ISO-8601 times of one format order as text
            return f"its erasure was due by {deadline}: overdue"
        return f"its erasure is due by {deadline}"
    if deletions:
        done = deletions[-1]
        return f"yet the ledger records its erasure completed at {done['completed_at']}"
    return "no deadline: no erasure is on record for it"


def _completed(newest: Row | None) -> str:
    if newest is None:
        return "no erasure times on record"
    return f"erasure completed at {newest['completed_at']} (deadline {_at(newest, 'deadline')})"


def _key_kept(current: Held | None, deletions: Sequence[Row]) -> str:
    """Where the key itself still is: its tombstone, until the tombstone's horizon."""
    if current is None or not current.tombstone:
        return ""
    rows = [r for r in deletions if int(r["offset"]) == current.offset]
    horizon = rows[0].get("horizon") if rows else None
    until = f"its horizon, {horizon}" if horizon else "its horizon (delete.retention.ms)"
    return f"; the key itself stays in its tombstone at offset {current.offset} until {until}"


def _at(row: Row, name: str) -> str:
    value = row.get(name)
    return "-" if value is None else str(value)


def proof(
    *,
    topic: str,
    partition: int,
    key_hash: str,
    now: str,
    current: Held | None,
    ledger: Sequence[Row],
    found: Sequence[Row],
    upstream: Sequence[Row],
    notes: Sequence[str],
) -> dict[str, Any]:
    """What ``verify-erasure --format json`` prints, and :func:`text` renders."""
    verdict = decide(current, ledger, found, now)
    return {
        "topic": topic,
        "partition": partition,
        "key_hash": key_hash,
        "checked_at": now,
        "verdict": verdict.name,
        "proven": verdict.proven,
        "why": verdict.why,
        "current": None
        if current is None
        else {"offset": current.offset, "tombstone": current.tombstone},
        "found": [dict(f) for f in found],
        "ledger": [dict(r) for r in ledger],
        "upstream": [dict(f) for f in upstream],
        "notes": list(notes),
    }


def text(proof: Mapping[str, Any]) -> str:
    """The proof for people: the verdict first, then why, the ledger, every place found."""
    lines = [
        f"{proof['topic']}-{proof['partition']} key {proof['key_hash'][:16]}…: {proof['verdict']}"
    ]
    lines += textwrap.wrap(proof["why"], _WIDTH, initial_indent="  ", subsequent_indent="    ")
    for row in proof["ledger"]:
        lines.append(f"  ledger: {_row(row)}")
    for f in proof["found"]:
        where = _NOT_READ_AS.get(f["kind"], f"still held ({f['kind']})")
        lines.append(f"  {where}: {f['location']}: {f['detail']}")
    # Upstream copies by file: a segment may hold the key many times.
    upstream = collections.Counter((f["location"], f["detail"]) for f in proof["upstream"])
    for (location, detail), times in upstream.items():
        also = f" (x{times})" if times > 1 else ""
        lines.append(f"  upstream (not owned): {location}: {detail}{also}")
    lines += [f"  note: {note}" for note in proof["notes"]]
    lines.append(f"  checked at {proof['checked_at']}")
    return "\n".join(lines)


_NOT_READ_AS = {UNREADABLE: "not read", UNMERGED: "not merged"}


def _row(row: Row) -> str:
    completed = row.get("completed_at")
    out = (
        f"offset {_at(row, 'offset')}: deleted {_at(row, 'appended_at')}, deadline "
        f"{_at(row, 'deadline')}, " + (f"completed {completed}" if completed else "not completed")
    )
    out += f", {_at(row, 'status')}"
    if row.get("breach_stage"):
        out += f" (breached at stage {row['breach_stage']})"
    if row.get("error"):
        out += f"; error: {row['error']}"
    return out
