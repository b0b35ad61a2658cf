"""Source data not merged, against the deletion SLA: a segment's first append time from its
header, and each partition's status (backlog, unverified, breached) by its oldest unread data."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from segcompact.erasure.html import render_html
from segcompact.erasure.report import build, iso, text, unread_breaches
from segcompact.erasure.unread import (
    BACKLOG,
    BREACHED,
    UNVERIFIED,
    Unread,
    findings,
    judge,
    reported,
    status_of,
)
from segcompact.erasure.verdict import ERASED, LIVE, NEVER_SEEN, PENDING, UNKNOWN, Held, decide
from segcompact.format.attributes import TimestampType
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.segment import FIRST_BATCH_HEAD, first_append_ms
from segcompact.metrics import JobMetrics

SLA = 4_000
NOW = 1_800_000_000_000


def _v2(timestamps: list[int], **kwargs: object) -> bytes:
    records = [Record(i, ts, b"k", b"v") for i, ts in enumerate(timestamps)]
    return build_batch(records, **kwargs)  # type: ignore[arg-type]


def test_the_first_append_time_is_the_base_timestamp_or_the_brokers() -> None:
    # The base timestamp: the first record's (a header holds no earlier one).
    assert first_append_ms(_v2([5_000, 3_000, 9_000])[:FIRST_BATCH_HEAD]) == 5_000
    appended = _v2([5_000], timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=7_777)
    assert first_append_ms(appended[:FIRST_BATCH_HEAD]) == 7_777
    assert first_append_ms(_v2([-1])[:FIRST_BATCH_HEAD]) is None  # no timestamp
    assert first_append_ms(_v2([5_000])[:20]) is None  # too few bytes
    assert first_append_ms(b"") is None


@pytest.mark.parametrize("magic", [0, 1])
def test_a_legacy_message_set_has_a_time_from_magic_1(magic: int) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
    builder.append(0, 6_000 if magic else None, b"k", b"v")
    assert first_append_ms(bytes(builder.build())[:FIRST_BATCH_HEAD]) == (6_000 if magic else None)


@given(since=st.integers(NOW - 10 * SLA, NOW + SLA), sla=st.integers(1, 10 * SLA))
def test_the_status_follows_the_age(since: int, sla: int) -> None:
    status = status_of(since, sla, NOW)
    age = NOW - since
    assert (status == BREACHED) == (age >= sla)
    assert (status == BACKLOG) == (age * 4 < sla)
    # Older is never better.
    order = [BACKLOG, UNVERIFIED, BREACHED]
    assert order.index(status_of(since - 1, sla, NOW)) >= order.index(status)


def test_data_of_no_readable_age_is_unverified_never_in_time_nor_breached() -> None:
    assert status_of(None, SLA, NOW) == UNVERIFIED


_unread = st.builds(
    Unread,
    topic=st.sampled_from(["gdpr", "plain"]),
    partition=st.integers(0, 3),
    location=st.text("abc/", min_size=1, max_size=6),
    since_ms=st.none() | st.integers(NOW - 2 * SLA, NOW),
    why=st.just("not merged yet"),
)


@given(st.lists(_unread, max_size=20))
def test_each_partition_of_an_sla_topic_is_judged_by_its_oldest(unread: list[Unread]) -> None:
    parts = judge(unread, lambda t: SLA if t == "gdpr" else None, NOW)
    gdpr = {(u.topic, u.partition) for u in unread if u.topic == "gdpr"}
    assert [(p.topic, p.partition) for p in parts] == sorted(gdpr)
    for p in parts:
        mine = [u for u in unread if (u.topic, u.partition) == (p.topic, p.partition)]
        assert p.segments == len(mine)
        times = [u.since_ms for u in mine]
        expected = None if None in times else min(t for t in times if t is not None)
        assert p.since_ms == expected
        assert p.status == status_of(expected, SLA, NOW)
        assert p.deadline_ms == (None if expected is None else expected + SLA)
    assert all(p.status != BACKLOG for p in reported(parts))


def test_the_report_names_unverified_and_breached_partitions() -> None:
    unread = [
        Unread("gdpr", 0, "/in/gdpr-0/00000000000000000010.log", NOW - SLA // 2, "not merged yet"),
        Unread("gdpr", 1, "/in/gdpr-1/00000000000000000005.log", NOW - SLA, "past the damage"),
        Unread("gdpr", 2, "/in/gdpr-2/00000000000000000000.log", NOW - 1, "not merged yet"),
    ]
    report = build([], [], lambda t: SLA, NOW, unread=judge(unread, lambda t: SLA, NOW))
    assert [(u["partition"], u["status"]) for u in report["unread"]] == [
        (0, UNVERIFIED),
        (1, BREACHED),
    ]
    assert [u["partition"] for u in unread_breaches(report)] == [1]
    shown = text(report)
    assert "no deletions recorded" in shown  # the ledger has none: said, and not alone
    # The summary line itself is not all clear.
    assert shown.splitlines()[0].endswith(
        "not counted above: 2 partition(s) with source data not merged "
        "(1 past the deadline, 1 unverified)"
    )
    assert "gdpr-0: unverified: 1 segment(s)" in shown
    assert "gdpr-1: unread data past its deadline" in shown and "past the damage" in shown
    assert "gdpr-2" not in shown  # younger than a quarter of the SLA: the usual wait
    page = render_html(report)
    assert 'id="unread"' in page and "past its deadline" in page and "past the damage" in page
    assert 'id="unread"' not in render_html(build([], [], lambda t: SLA, NOW))
    # /metrics counts the breach where an alert on breaches looks, as health does.
    metrics = JobMetrics()
    metrics.tables([], report, NOW, judge(unread, lambda t: SLA, NOW), ["gdpr"])
    scraped = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(metrics.registry).decode())
        for s in family.samples
    }
    assert scraped[("segcompact_deletions_breached", (("kind", "unread"),))] == 1
    assert scraped[("segcompact_unverified_partitions", (("topic", "gdpr"),))] == 2


@pytest.mark.parametrize(
    ("current", "ledger", "was"),
    [
        (None, [{"offset": 3, "appended_at": "t", "deadline": "u", "completed_at": "v"}], ERASED),
        (Held(4, False), [], LIVE),
        (None, [], NEVER_SEEN),
    ],
)
def test_unmerged_data_of_the_partition_makes_an_absence_unknown(
    current: Held | None, ledger: list[dict[str, object]], was: str
) -> None:
    assert decide(current, ledger, [], "w").name == was
    unread = [
        Unread("gdpr", 0, "/in/gdpr-0/00000000000000000010.log", NOW, "not merged yet"),
        Unread("gdpr", 1, "/in/gdpr-1/00000000000000000000.log", NOW, "not merged yet"),
    ]
    found = findings(unread, "gdpr", 0, iso)
    assert [f["location"] for f in found] == ["/in/gdpr-0/00000000000000000010.log"]
    verdict = decide(current, ledger, found, "w")
    assert verdict.name == UNKNOWN and not verdict.proven
    assert "not merged yet" in verdict.why


def test_a_copy_found_stands_beside_unmerged_data() -> None:
    found = [
        {"kind": "table", "location": "/t/a.parquet", "offset": 1, "detail": "row"},
        *findings([Unread("gdpr", 0, "/in/x.log", None, "not merged yet")], "gdpr", 0, iso),
    ]
    verdict = decide(None, [], found, "w")
    assert verdict.name == PENDING and not verdict.proven
    assert found[1]["detail"] == "not merged yet, since an unknown time"


def test_an_unmerged_segment_read_whole_without_the_key_changes_no_verdict() -> None:
    active = Unread("gdpr", 0, "/in/gdpr-0/00000000000000000010.log", NOW, "not merged yet")
    damaged = Unread("gdpr", 0, "/in/gdpr-0/00000000000000000005.log", NOW, "past the damage", True)
    cleared = {active.location, damaged.location}  # both decoded: the damaged one still counts
    found = findings([active, damaged], "gdpr", 0, iso, cleared)
    assert [f["location"] for f in found] == [damaged.location]
    assert [f["location"] for f in findings([active], "gdpr", 0, iso, cleared)] == []
    assert decide(Held(4, False), [], [], "w").proven
