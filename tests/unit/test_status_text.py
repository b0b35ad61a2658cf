"""``segcompact status``'s text: ISO times, durations, 120 columns unless ``--wide``."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from segcompact.status import WIDTH, text

NOW = 1_795_854_950_740
HOUR = 3_600_000


def _row(**changes: Any) -> dict[str, Any]:
    row = {
        "topic": "sessions",
        "partition": 0,
        "log_start_offset": 0,
        "log_end_offset": 433,
        "records": 433,
        "keys": 40,
        "dirty_bytes": 1200,
        "clean_bytes": 3600,
        "dirty_ratio": 0.25,
        "max_compaction_delay_ms": 0,
        "due": None,
        "tombstones_pending": 2,
        "young_records": 0,
        "next_horizon_ms": NOW + 6 * HOUR,
        "keyless_records": 0,
        "last_materialized_ms": NOW - 26 * HOUR,
        "uncleanable": None,
    }
    return {**row, **changes}


def test_times_are_durations_by_default_and_iso_when_wide() -> None:
    overdue = _row(partition=1, next_horizon_ms=NOW - 45_000, max_compaction_delay_ms=2 * HOUR)
    narrow = text([_row(), overdue], NOW)
    assert "in 6h" in narrow and "1d 2h ago" in narrow and "overdue by 45s" in narrow
    assert "2h" in narrow.splitlines()[2]
    assert str(NOW) not in narrow and "2026-" not in narrow
    wide = text([_row()], NOW, wide=True)
    assert "2026-11-28T14:35:50.740Z" in wide  # next horizon, ISO-8601 UTC
    assert "2026-11-27T06:35:50.740Z" in wide  # last materialised
    for field in ("log_start_offset", "dirty_bytes", "clean_bytes", "keyless_records"):
        assert field in wide.splitlines()[0]


def test_uncleanable_is_shown_instead_of_due() -> None:
    out = text([_row(uncleanable="truncated segment 00000000000000000000.log")], NOW)
    assert "UNCLEANABLE: truncated segment" in out.splitlines()[1]


def test_no_rows() -> None:
    assert text([], NOW) == "no partitions yet"


def test_each_skipped_directory_is_named_once_after_the_partitions() -> None:
    skipped = [
        {"path": "b'/logs/good-0\\n'", "reason": "not a partition directory: character"},
        {"path": "/logs/lz-0007", "reason": "not a partition directory: leading zero"},
    ]
    for rows, wide in (([], False), ([_row()], False), ([_row()], True)):
        lines = text(rows, NOW, wide=wide, skipped=skipped).splitlines()
        assert lines[-2:] == [
            "skipped: b'/logs/good-0\\n': not a partition directory: character",
            "skipped: /logs/lz-0007: not a partition directory: leading zero",
        ]
        assert sum("skipped" in line for line in lines) == 2


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._-", min_size=1, max_size=249)


@given(
    st.lists(
        st.builds(
            _row,
            topic=_names,
            partition=st.integers(0, 2**31 - 1),
            records=st.integers(0, 2**62),
            due=st.none() | st.just("dirty ratio, max compaction lag, tombstone horizon passed"),
            uncleanable=st.none() | st.text(min_size=1, max_size=300).map(str.strip),
            next_horizon_ms=st.none() | st.integers(0, 2**45),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_every_line_fits_unless_wide(rows: list[dict[str, Any]]) -> None:
    rows = [{**r, "uncleanable": r["uncleanable"] or None} for r in rows]
    lines = text(rows, NOW).splitlines()
    assert len(lines) == len(rows) + 1
    assert all(len(line) <= WIDTH for line in lines)
    wide = text(rows, NOW, wide=True).splitlines()
    assert all(r["topic"] in line for r, line in zip(rows, wide[1:], strict=True))
