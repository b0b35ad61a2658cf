"""``verify-erasure``'s verdicts from what was read and scanned, in JSON and text (no Spark)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.erasure.verdict import (
    ERASED,
    LIVE,
    NEVER_SEEN,
    PENDING,
    UNKNOWN,
    UNREADABLE,
    VERDICTS,
    Held,
    decide,
    proof,
    text,
)

DELETED_AT = "2026-11-27T10:00:00.000Z"
DEADLINE = "2026-11-28T10:00:00.000Z"
COMPLETED = "2026-11-27T16:00:00.000Z"
HORIZON = "2026-11-29T10:00:00.000Z"
NOW = "2026-11-27T18:00:00.000Z"


def _row(offset: int, *, completed: bool) -> dict[str, Any]:
    """A delete row as ``key_rows`` gives it: ISO times, the missing ones left out."""
    row = {
        "kind": "delete",
        "topic": "users",
        "partition": 0,
        "key_hash": "4eb8" * 16,
        "offset": offset,
        "appended_at": DELETED_AT,
        "deadline": DEADLINE,
        "horizon": HORIZON,
        "status": "met" if completed else "pending",
    }
    return {**row, "completed_at": COMPLETED} if completed else row


def _found(kind: str, offset: int | None = 0) -> dict[str, Any]:
    detail = "cannot be read: denied" if kind == UNREADABLE else "table data file, row of offset 0"
    return {
        "kind": kind,
        "location": f"/tables/state/{kind}.parquet",
        "offset": offset,
        "detail": detail,
    }


UPSTREAM = [{"kind": "upstream", "location": "/kafka/users-0/0.log", "offset": 0, "detail": "x"}]

# name: (current, ledger, found, verdict, proven, what the reason says)
CASES: dict[
    str, tuple[Held | None, list[dict[str, Any]], list[dict[str, Any]], str, bool, list[str]]
] = {
    "erased": (
        Held(3, tombstone=True),
        [_row(3, completed=True)],
        [],
        ERASED,
        True,
        [DELETED_AT, COMPLETED, DEADLINE, "tombstone at offset 3", HORIZON],
    ),
    "erased, tombstone expired": (None, [_row(3, completed=True)], [], ERASED, True, [COMPLETED]),
    "pending, nothing found but the ledger's erasure still open": (
        Held(3, tombstone=True),
        [_row(3, completed=False)],
        [],
        PENDING,
        False,
        ["no value of it in anything", "has not completed yet", f"due by {DEADLINE}"],
    ),
    "erased, topic without an SLA": (
        Held(3, tombstone=True),
        [],
        [],
        ERASED,
        True,
        ["no ledger row", "gdpr.deletion.sla.ms"],
    ),
    "pending": (
        Held(3, tombstone=True),
        [_row(3, completed=False)],
        [_found("table"), _found("output")],
        PENDING,
        False,
        [DELETED_AT, f"due by {DEADLINE}", "2 places still hold"],
    ),
    "pending, overdue": (
        Held(3, tombstone=True),
        [{**_row(3, completed=False), "deadline": "2026-11-27T12:00:00.000Z"}],
        [_found("table")],
        PENDING,
        False,
        ["was due by 2026-11-27T12:00:00.000Z: overdue"],
    ),
    "pending though the ledger says done": (
        Held(3, tombstone=True),
        [_row(3, completed=True)],
        [_found("output")],
        PENDING,
        False,
        [f"completed at {COMPLETED}"],
    ),
    "pending, no deletion on record": (
        None,
        [],
        [_found("table")],
        PENDING,
        False,
        ["no deadline"],
    ),
    "live": (Held(7, tombstone=False), [], [], LIVE, True, ["offset 7", "no older value"]),
    "live, deleted before": (
        Held(7, tombstone=False),
        [_row(3, completed=True)],
        [],
        LIVE,
        True,
        ["offset 7"],
    ),
    "live with older copies": (
        Held(7, tombstone=False),
        [],
        [_found("table")],
        LIVE,
        False,
        ["offset 7", "1 older copy still holds"],
    ),
    "never seen": (None, [], [], NEVER_SEEN, False, ["nothing of this key", "--key-b64"]),
    "unknown, else erased": (
        Held(3, tombstone=True),
        [_row(3, completed=True)],
        [_found(UNREADABLE, None)],
        UNKNOWN,
        False,
        ["1 location could not be read"],
    ),
    "unknown, else live": (
        Held(7, tombstone=False),
        [],
        [_found(UNREADABLE, None)],
        UNKNOWN,
        False,
        ["offset 7", "could not be read"],
    ),
    "unknown, else never seen": (None, [], [_found(UNREADABLE, None)], UNKNOWN, False, ["nothing"]),
    "pending with a file not read": (
        Held(3, tombstone=True),
        [_row(3, completed=False)],
        [_found("table"), _found(UNREADABLE, None)],
        PENDING,
        False,
        ["1 place still holds"],
    ),
}


def _proof(current: Held | None, ledger: list[Any], found: list[Any]) -> dict[str, Any]:
    return proof(
        topic="users",
        partition=0,
        key_hash="4eb8" * 16,
        now=NOW,
        current=current,
        ledger=ledger,
        found=found,
        upstream=UPSTREAM,
        notes=["a note"],
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_verdict_is_said_the_same_in_json_and_text(case: str) -> None:
    current, ledger, found, verdict, proven, mentions = CASES[case]
    shown = _proof(current, ledger, found)
    as_json = json.loads(json.dumps(shown))
    assert (as_json["verdict"], as_json["proven"]) == (verdict, proven)
    for mention in mentions:
        assert mention in as_json["why"], (mention, as_json["why"])
    lines = text(shown).splitlines()
    assert lines[0] == f"users-0 key {'4eb8' * 4}…: {verdict}"
    said = " ".join(line.strip() for line in lines)
    assert as_json["why"] in said
    for f in found:
        assert f"{f['location']}: {f['detail']}" in said
    assert "upstream (not owned): /kafka/users-0/0.log" in said
    assert "note: a note" in said
    assert lines[-1] == f"  checked at {NOW}" and as_json["checked_at"] == NOW
    for row in ledger:
        done = f"completed {row['completed_at']}" if "completed_at" in row else "not completed"
        assert f"offset {row['offset']}: deleted {DELETED_AT}, deadline {row['deadline']}" in said
        assert f"{done}, {row['status']}" in said


def test_unknown_lines_say_not_read() -> None:
    lines = text(_proof(None, [], [_found(UNREADABLE, None)])).splitlines()
    assert "  not read: /tables/state/unreadable.parquet: cannot be read: denied" in lines


# --- every input: one verdict, and proof only when nothing but the current value is held --

_TIMES = st.sampled_from([DELETED_AT, DEADLINE, COMPLETED])
_ROWS = st.lists(
    st.fixed_dictionaries(
        {"offset": st.integers(0, 20)},
        optional={
            "appended_at": _TIMES,
            "deadline": _TIMES,
            "completed_at": _TIMES,
            "horizon": _TIMES,
            "status": st.sampled_from(["pending", "met", "breached"]),
            "breach_stage": st.sampled_from(["purged", "vacuumed"]),
            "error": st.text(max_size=20),
        },
    ),
    max_size=3,
    unique_by=lambda r: r["offset"],  # the ledger holds one delete row per tombstone offset
)
_CURRENT = st.none() | st.builds(Held, st.integers(0, 20), st.booleans())
_FOUND = st.lists(
    st.builds(
        lambda kind, offset: _found(kind, offset),
        st.sampled_from(["table", "output", "raw", UNREADABLE]),
        st.none() | st.integers(0, 20),
    ),
    max_size=3,
)


@given(_CURRENT, _ROWS, _FOUND)
def test_a_verdict_is_proven_only_when_nothing_else_is_held(
    current: Held | None, ledger: list[dict[str, Any]], found: list[dict[str, Any]]
) -> None:
    verdict = decide(current, ledger, found, NOW)
    assert verdict.name in VERDICTS
    if verdict.proven:
        assert found == [], "a copy, or a file not read, was found: nothing is proven"
        assert verdict.name in (ERASED, LIVE)
    if verdict.name == ERASED:
        assert verdict.proven
    if verdict.name == LIVE:
        assert current is not None and not current.tombstone
    if current is not None and not current.tombstone:
        assert verdict.name in (LIVE, UNKNOWN)
        assert verdict.proven == (found == [])
    if any(f["kind"] == UNREADABLE for f in found):
        assert verdict.name not in (ERASED, NEVER_SEEN)
    if verdict.name == NEVER_SEEN:
        assert current is None and ledger == [] and found == []
    if current is not None and current.tombstone and not found:
        newest = max(ledger, key=lambda r: int(r["offset"])) if ledger else None
        open_ = newest is not None and newest.get("completed_at") is None
        assert verdict.name == (PENDING if open_ else ERASED)


@given(_CURRENT, _ROWS, _FOUND)
def test_text_never_fails_and_leads_with_the_verdict(
    current: Held | None, ledger: list[dict[str, Any]], found: list[dict[str, Any]]
) -> None:
    shown = _proof(current, ledger, found)
    lines = text(shown).splitlines()
    assert lines[0].endswith(f": {shown['verdict']}")
    assert all(len(line) <= 100 for line in lines[1:2])
    assert len([line for line in lines if line.startswith("  ledger: ")]) == len(ledger)


def test_an_upstream_file_holding_the_key_often_is_one_line() -> None:
    shown = _proof(None, [], [])
    shown["upstream"] = [*UPSTREAM * 3, {**UPSTREAM[0], "location": "/kafka/users-0/9.log"}]
    lines = [line for line in text(shown).splitlines() if "upstream" in line]
    assert lines == [
        "  upstream (not owned): /kafka/users-0/0.log: x (x3)",
        "  upstream (not owned): /kafka/users-0/9.log: x",
    ]
