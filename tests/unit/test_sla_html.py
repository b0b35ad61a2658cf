"""``segcompact.erasure.html`` without a browser: escaping, the empty report, well-formed output,
every section a compliance reader looks for.

The browser test (tests/browser) checks what a person sees; these run in milliseconds.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from segcompact.erasure.glossary import GLOSSARY, NOT_OWNED, STAGE_WORDS
from segcompact.erasure.html import render_html
from segcompact.erasure.report import build
from segcompact.erasure.schedule import STAGES
from tests.support.ledger import HOUR, MINUTE, SLAS, T0, delete_row, round_row

EVIL = "<script>alert(1)</script>"
VOID = {"meta", "br", "hr", "img", "input", "link"}


class _Balance(HTMLParser):
    """Fails on a close tag that does not match the open one: a broken page in a browser."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open.pop() == tag, f"unbalanced </{tag}>"


def _well_formed(page: str) -> None:
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.open == []


def _row(topic: str, **over: Any) -> dict[str, Any]:
    row = {
        "topic": topic, "partition": 0, "key_hash": EVIL, "offset": 5,
        "appended_at": "2026-11-23T08:00:00.000Z", "deadline": "2026-11-23T09:00:00.000Z",
        "completed_at": "2026-11-23T09:30:00.000Z", "status": "breached", "breach_stage": EVIL,
        "stages": {"seen": "2026-11-23T08:00:01.000Z"},
    }  # fmt: skip
    return row | over


def test_every_report_string_is_escaped() -> None:
    partition = {"topic": EVIL, "partition": 0, "sla_ms": 3_600_000, "pending": 0, "met": 0,
                 "breached": 1, "time_to_erasure_ms": {"p50": 1, "p99": 2, "max": 5_400_000},
                 "stage_ms": {"seen": 10, "merged": 20},
                 "oldest_pending": {"key_hash": EVIL, "offset": 1, "deadline": EVIL}}  # fmt: skip
    overwrite = _row(
        EVIL, appended_at=None, appended_from="2026-11-23T08:00:00.000Z", key_hash=None
    )
    tally = {"total": 1, "met": 0, "pending": 0, "breached": 1,
             "percent": {"met": 0.0, "pending": 0.0, "breached": 100.0}}  # fmt: skip
    report = {
        "generated_at": EVIL,
        "period": {"first": EVIL, "last": EVIL},
        "scope": {"config": EVIL, "sources": [EVIL], "state_table": EVIL, "ledger_table": EVIL,
                  "output": EVIL, "checkpoint": EVIL, "topics": [{"topic": EVIL, "sla_ms": 1}]},
        "summary": {"overall": tally, "by_kind": {"deletion": tally},
                    "by_topic": [{"topic": EVIL, "sla_ms": 3_600_000, **tally}]},
        "partitions": [partition],
        "deletions": [_row(EVIL)],
        "overwrites": [overwrite],
        "upstream": [{"location": EVIL, "note": EVIL}],
        "not_owned": [{"what": EVIL, "note": EVIL}],
    }  # fmt: skip
    page = render_html(report)
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    _well_formed(page)


def test_empty_report_says_so() -> None:
    page = render_html({"generated_at": "2026-11-23T10:00:00.000Z", "partitions": [],
                        "deletions": [], "overwrites": [], "upstream": []})  # fmt: skip
    assert page.startswith("<!DOCTYPE html>")
    assert "Nothing to report" in page
    assert "<svg" not in page
    _well_formed(page)
    # Nothing at all, not even the keys, is a report too.
    assert "Nothing to report" in render_html({})


def test_no_completed_row_draws_no_marks() -> None:
    partition = {"topic": "t", "partition": 1, "sla_ms": 60_000, "pending": 1, "met": 0,
                 "breached": 0, "time_to_erasure_ms": None, "stage_ms": {},
                 "oldest_pending": None}  # fmt: skip
    page = render_html(
        {"partitions": [partition], "deletions": [_row("t", completed_at=None, status="pending")]}
    )
    assert "has completed yet" in page
    assert 'class="mark' not in page
    _well_formed(page)


def test_one_mark_per_completed_row_and_nothing_external() -> None:
    rows = [_row("t", offset=n, status="met") for n in range(3)] + [_row("t", offset=9)]
    page = render_html({"partitions": [], "deletions": rows, "overwrites": []})
    assert page.count('<circle class="mark') == 4
    assert page.count('<circle class="mark breached"') == 1
    for external in ("http:", "https:", "src=", "<link", "@import", "url("):
        assert external not in page


def test_the_page_has_every_section_a_compliance_reader_needs() -> None:
    deletes = [
        delete_row("users", 1, T0, 20 * MINUTE),
        delete_row("users", 2, T0 + 10 * MINUTE, 90 * MINUTE),
        delete_row("orders", 3, T0 + 20 * MINUTE, None),
    ]
    rounds = [round_row("orders", 1, T0, 30 * MINUTE)]
    scope = {
        "config": "conf/compactor.toml",
        "sources": ["data/segments"],
        "state_table": "data/state",
        "ledger_table": "data/state_deletion_ledger",
        "output": "data/compacted",
        "checkpoint": "checkpoints/segcompact",
        "topics": [{"topic": "users", "sla_ms": HOUR}, {"topic": "*", "sla_ms": 2 * HOUR}],
    }
    report = build(deletes, rounds, SLAS.get, T0 + 2 * HOUR, [], scope)  # fmt: skip
    page = render_html(report)
    _well_formed(page)
    text = _visible_text(page)
    assert "2 of 4 erasures met their deadline (50.0 %); 1 pending, 1 missed." in text
    assert "topic users" in text and "1 (50.0 %)" in text
    for wanted in (
        "First deletion or overwrite covered2026-11-18 11:06:40 UTC",
        "Last deletion or overwrite covered2026-11-18 11:26:40 UTC",
        "Report made at2026-11-18 13:06:40 UTC",
        "Job configurationconf/compactor.toml",
        "Tables (current data, ledger)data/state, data/state_deletion_ledger",
        "Progress checkpointcheckpoints/segcompact",
        "Topics with a deadlineusers: 1 h; every other topic: 2 h",
        "deadline of orders: 2 h",
        "when the value was deleted or replaced (UTC, from 2026-11-18)",
        "time to erasure",
        "mean time since the deletion or overwrite",
    ):
        assert wanted in text, wanted
    for term, meaning in GLOSSARY:
        assert f"{term}{meaning}" in text
    for what, note in NOT_OWNED:
        assert f"{what}: {note}" in text
    # Plain words on the page: a name for every stage, never the ledger's own.
    assert tuple(STAGE_WORDS) == STAGES
    assert STAGE_WORDS["versions_removed"] in text
    for jargon in ("versions_removed", "vacuumed", "materialized", "breach_stage"):
        assert jargon not in text


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.skip += tag in ("style", "title")

    def handle_endtag(self, tag: str) -> None:
        self.skip -= tag in ("style", "title")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def _visible_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return "".join(parser.parts)
