"""The shipper's rules over a partition directory's file names: which segments are rolled, in
which order they ship, which offsets are gaps."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.format.writer import segment_name
from segcompact.ship.rules import (
    Gap,
    Listing,
    Ship,
    TopicSelection,
    high_watermarks,
    plan,
    went_back,
)

OTHER_FILES = (
    "leader-epoch-checkpoint",
    "partition.metadata",
    "00000000000000000000.txnindex",
    "00000000000000000007.snapshot",
    "00000000000000000000.log.deleted",
    "00000000000000000000.log.cleaned",
    "00000000000000000000.index.deleted",
    "00000000000000000300.log.tmp",
    "0.log",
)


def names(*segments: int, partial: dict[int, tuple[str, ...]] | None = None) -> list[str]:
    """The files of complete segments at ``segments``, and of ``partial`` ones."""
    out = [f"{b:020d}.{kind}" for b in segments for kind in ("log", "index", "timeindex")]
    for b, kinds in (partial or {}).items():
        out += [f"{b:020d}.{kind}" for kind in kinds]
    return out


def test_the_active_segment_is_never_rolled() -> None:
    listing = Listing.of(names(0, 100, 200))
    assert listing.rolled() == [0, 100]
    assert plan(listing, None) == [Ship(0, 100), Ship(100, 200)]


def test_a_newer_segment_counts_once_its_indexes_are_there() -> None:
    listing = Listing.of(names(0, partial={100: ("log",)}))
    assert listing.rolled() == []
    assert plan(listing, None) == []
    listing = Listing.of(names(0, partial={100: ("log", "index")}))
    assert plan(listing, None) == []
    assert plan(Listing.of(names(0, 100)), None) == [Ship(0, 100)]


def test_the_brokers_other_files_are_never_segments() -> None:
    listing = Listing.of([*names(0, 100), *OTHER_FILES])
    assert listing.logs == (0, 100)
    assert plan(listing, None) == [Ship(0, 100)]


def test_nothing_is_decided_while_the_cleaner_swaps() -> None:
    # The cleaner renamed 0.log to .deleted and has not renamed its .swap to 0.log yet: 0 is
    # not a deleted segment.
    swapping = [
        *names(100, 200),
        "00000000000000000000.log.swap",
        "00000000000000000000.log.deleted",
    ]
    assert plan(Listing.of(swapping), 0) == []
    assert plan(Listing.of(names(0, 100, 200)), 0) == [Ship(0, 100), Ship(100, 200)]


def test_a_rewrite_of_a_shipped_segment_is_left_alone() -> None:
    # 0 was shipped (up to 100); the cleaner merged 0 and 100 into 0 and 100 is gone.
    assert plan(Listing.of(names(0, 200, 300)), 100) == [Gap(100, 200), Ship(200, 300)]
    # 0 and 100 shipped; a rewrite of 0 keeps its name and is below what was shipped.
    assert plan(Listing.of(names(0, 100, 200, 300)), 200) == [Ship(200, 300)]


def test_a_segment_deleted_before_it_was_shipped_is_a_gap() -> None:
    # shipped up to 200; 200 and 300 deleted by retention; 400 rolled, 500 active
    assert plan(Listing.of(names(400, 500)), 200) == [Gap(200, 400), Ship(400, 500)]
    # nothing rolled is left: the gap is still named, up to the active segment
    assert plan(Listing.of(names(400)), 200) == [Gap(200, 400)]


def test_before_anything_was_shipped_nothing_is_a_gap() -> None:
    assert plan(Listing.of(names(400, 500)), None) == [Ship(400, 500)]


@st.composite
def directories(draw: st.DrawFn) -> tuple[list[str], int | None]:
    bases = sorted(draw(st.sets(st.integers(0, 60).map(lambda b: b * 10), max_size=8)))
    files: list[str] = []
    for b in bases:
        kinds = draw(st.sets(st.sampled_from(("log", "index", "timeindex")), min_size=1))
        files += [f"{b:020d}.{k}" for k in kinds]
    files += draw(st.lists(st.sampled_from(OTHER_FILES), max_size=3))
    shipped = draw(st.none() | st.integers(0, 700))
    return draw(st.permutations(files)), shipped


@given(directories())
def test_plans_ship_rolled_segments_in_offset_order_and_cover_every_offset(
    found: tuple[list[str], int | None],
) -> None:
    files, shipped = found
    listing = Listing.of(files)
    steps = plan(listing, shipped)
    logs = set(listing.logs)
    complete = listing.complete
    position = shipped
    for step in steps:
        assert step.start < step.end
        if position is not None:
            assert step.start == position  # contiguous: nothing skipped, nothing twice
        position = step.end
        if isinstance(step, Ship):
            assert step.start in logs
            assert segment_name(step.start) in files
            assert any(c > step.start for c in complete)  # rolled
            assert step.end == min(b for b in logs if b > step.start)
            assert step.start != max(logs)  # never the active segment
        else:
            assert shipped is not None  # no gap before the first shipment
            assert not any(step.start <= b < step.end for b in logs)  # truly missing
            assert step.end in logs
    # Whatever was not planned waits for a roll: the next segment is not rolled yet.
    if position is not None:
        later = [b for b in listing.logs if b >= position]
        assert not later or later[0] not in listing.rolled() or later[0] > position


@given(st.lists(st.integers(0, 50), unique=True, min_size=1, max_size=6))
def test_planning_again_after_doing_the_plan_does_nothing(bases: list[int]) -> None:
    listing = Listing.of(names(*sorted(b * 10 for b in bases)))
    steps = plan(listing, None)
    covered = steps[-1].end if steps else None
    assert plan(listing, covered) == []


def test_topics_by_name_or_by_a_whole_match_of_a_pattern() -> None:
    chosen = TopicSelection(frozenset({"orders"}), re.compile(r"audit\..*"))
    assert "orders" in chosen
    assert "audit.eu" in chosen
    assert "orders2" not in chosen
    assert "xaudit.eu" not in chosen  # whole match, as Kafka Connect's topics.regex
    assert "users" not in TopicSelection(frozenset({"orders"}))


def test_a_log_that_now_ends_below_what_was_shipped_went_back() -> None:
    # orders was deleted and created again: its offsets start from 0 once more.
    assert went_back(Listing.of(names(0, 10)), 300)
    assert not went_back(Listing.of(names(0, 300)), 300)  # 300 is the active segment
    assert not went_back(Listing.of(names(0, 10)), None)
    assert not went_back(Listing.of([]), 300)  # an empty directory: nothing to say yet


@given(directories())
def test_a_log_that_went_back_has_nothing_planned_but_gaps(
    found: tuple[list[str], int | None],
) -> None:
    files, shipped = found
    listing = Listing.of(files)
    if went_back(listing, shipped):
        assert not any(isinstance(s, Ship) for s in plan(listing, shipped))


def test_a_segment_ships_once_its_records_are_committed() -> None:
    listing = Listing.of(names(0, 100, 200, 300))
    assert plan(listing, None, committed=150) == [Ship(0, 100)]
    assert plan(listing, None, committed=200) == [Ship(0, 100), Ship(100, 200)]
    assert plan(listing, 100, committed=0) == []
    assert plan(listing, None, committed=None) == [Ship(0, 100), Ship(100, 200), Ship(200, 300)]


@given(directories(), st.integers(0, 700))
def test_nothing_above_the_high_watermark_ships(
    found: tuple[list[str], int | None], committed: int
) -> None:
    files, shipped = found
    listing = Listing.of(files)
    gated = plan(listing, shipped, committed)
    assert all(s.end <= committed for s in gated if isinstance(s, Ship))
    assert gated == plan(listing, shipped)[: len(gated)]  # the same plan, cut short


def test_the_brokers_high_watermark_checkpoint() -> None:
    text = "0\n3\norders 0 1200\norders 1 5\n__consumer_offsets 0 77\n"
    assert high_watermarks(text) == {
        ("orders", 0): 1200,
        ("orders", 1): 5,
        ("__consumer_offsets", 0): 77,
    }
    assert high_watermarks("") == {}  # as the broker creates it, before its first checkpoint
    for bad in ("0\n", "1\n0\n", "0\n2\norders 0 1\n", "0\n1\norders 0\n", "0\n1\norders x 1\n"):
        with pytest.raises(ValueError):
            high_watermarks(bad)
