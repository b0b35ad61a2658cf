"""The in-task reduction: the C front is its pure twin, and reducing a segment changes no winner
under any log start, no count and no first dirty timestamp."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segcompact.compaction import _cfront  # a missing extension fails here, on purpose
from segcompact.compaction.front import PyFront
from segcompact.compaction.reduce import SegmentReducer
from segcompact.compaction.rules import RULE_FIELDS, Ranking
from segcompact.config import CompactionStrategy
from segcompact.format.arrow import SCHEMA
from tests.support.model import header_version, order_key
from tests.support.second_pass import WholeChunks

VERSION = "v"


def record(offset: int, **fields: Any) -> dict[str, Any]:
    row = {
        "key": b"k",
        "value": b"x",
        "topic": "t",
        "partition": 0,
        "offset": offset,
        "timestamp": 0,
        "timestampType": 0,
        "headers": [],
        "attributes": 0,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "is_transactional": False,
        "is_control": False,
        "delete_horizon": None,
        "batch_base_offset": offset,
        "batch_last_offset": offset,
        "magic": 2,
        "compression": 0,
    }
    row.update(fields)
    return row


def batch(rows: Sequence[dict[str, Any]]) -> pa.RecordBatch:
    rows = [{**r, "timestamp": r["timestamp"] * 1000} for r in rows]  # ms → the column's µs
    return pa.RecordBatch.from_pylist(list(rows), schema=SCHEMA)


def reduce(
    chunks: Sequence[Sequence[dict[str, Any]]],
    ranking: Ranking,
    budget: int = 1 << 30,
    pure: bool = False,
    records: int = 1 << 30,
) -> tuple[list[dict[str, Any]], SegmentReducer]:
    reducer = SegmentReducer(ranking, budget_bytes=budget, budget_records=records, pure=pure)
    out: list[pa.RecordBatch] = []
    for rows in chunks:
        out.extend(reducer.add(batch(rows)))
    out.extend(reducer.finish())
    if reducer.rescan:  # decoded again, in other chunks
        everything = [r for c in chunks for r in c]
        again = WholeChunks(reducer).again
        for at in range(0, len(everything), 3):
            out.extend(again(batch(everything[at : at + 3])))
        assert reducer.rescanned
    kept = [r for b in out for r in b.to_pylist()]
    for r in kept:
        r["timestamp"] = int(r["timestamp"].timestamp() * 1000)
        for f in RULE_FIELDS:  # every row leaves classified (tests/unit/test_rules.py)
            del r[f.name]
    return kept, reducer


def spark_candidate(r: dict[str, Any]) -> bool:
    """What the merge ranks (unreadable versions included: they rank as without one)."""
    return r["key"] is not None and not r["is_transactional"] and not r["is_control"]


def winners(
    rows: Sequence[dict[str, Any]], strategy: CompactionStrategy, log_start: int
) -> dict[bytes, int]:
    best: dict[bytes, tuple[tuple[int, int, int], int]] = {}
    for r in rows:
        if not spark_candidate(r) or r["offset"] < log_start:
            continue
        version = header_version([(h["key"], h["value"]) for h in r["headers"]], VERSION)
        rank = order_key(strategy, r["offset"], r["timestamp"], version)
        if r["key"] not in best or rank > best[r["key"]][0]:
            best[r["key"]] = (rank, r["offset"])
    return {k: offset for k, (_, offset) in best.items()}


versions = st.one_of(
    st.none(),
    st.integers(-3, 3).map(lambda v: struct.pack(">q", v)),
    st.sampled_from([b"", b"\x01", None]),  # present, unreadable
)


@st.composite
def logs(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    n = draw(st.integers(1, 40))
    rows = []
    for offset in range(n):
        version = draw(versions)
        headers = [] if version is None else [{"key": VERSION, "value": version}]
        if version is not None and draw(st.booleans()):
            headers.insert(0, {"key": VERSION, "value": struct.pack(">q", 9)})  # the last counts
        rows.append(
            record(
                offset * draw(st.integers(1, 3)) + offset,
                key=draw(st.sampled_from([b"a", b"b", b"c", b"", None])),
                timestamp=draw(st.integers(0, 5)),
                headers=headers,
                is_transactional=draw(st.integers(0, 9)) == 0,
                is_control=draw(st.integers(0, 19)) == 0,
            )
        )
    offsets = sorted({r["offset"] for r in rows})
    for r, offset in zip(rows, offsets, strict=False):
        r["offset"] = offset
    rows = rows[: len(offsets)]
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    bounds = [0, *cuts, len(rows)]
    return [rows[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(
    logs(),
    st.sampled_from(list(CompactionStrategy)),
    st.sampled_from([1 << 30, 1, 2000]),
    st.booleans(),
    st.sampled_from([1 << 30, 1, 5, 12]),
)
def test_reduction_keeps_every_winner_for_every_log_start_and_every_count(
    chunks: list[list[dict[str, Any]]],
    strategy: CompactionStrategy,
    budget: int,
    pure: bool,
    records: int,
) -> None:
    """Exact whatever the budgets: of bytes, and of records a round takes."""
    rows = [r for c in chunks for r in c]
    header = VERSION if strategy is CompactionStrategy.HEADER else None
    kept, reducer = reduce(chunks, Ranking(strategy.value, header), budget, pure, records)
    starts = {0, *(r["offset"] for r in rows), max((r["offset"] for r in rows), default=0) + 1}
    for log_start in sorted(starts):
        assert winners(kept, strategy, log_start) == winners(rows, strategy, log_start), log_start
    # Every raw row stays once; every record is either kept or counted as folded.
    raw = [r for r in rows if not spark_candidate(r)]
    assert [r for r in kept if not spark_candidate(r)] == raw
    assert len(kept) + reducer.folded == len(rows)
    assert reducer.folded >= 0 and len({r["offset"] for r in kept}) == len(kept)
    data = [r for r in rows if not r["is_control"]]
    kept_data = [r for r in kept if not r["is_control"]]
    # The earliest timestamp is kept, or on the summary row (the column's µs) if folded.
    earliest = [reducer.earliest // 1000] if reducer.folded and reducer.earliest is not None else []
    assert min([r["timestamp"] for r in kept_data] + earliest, default=None) == min(
        (r["timestamp"] for r in data), default=None
    )
    # One candidate per key when the reducer says so (the offset strategy, in one round).
    candidates = [r["key"] for r in kept if spark_candidate(r)]
    if reducer.one_per_key:
        assert len(set(candidates)) == len(candidates)
    if strategy is CompactionStrategy.OFFSET and budget == records == 1 << 30:
        assert reducer.one_per_key
    assert max((r["offset"] for r in kept_data), default=None) == max(
        (r["offset"] for r in data), default=None
    )


def test_offset_strategy_keeps_the_latest_record_per_key_only() -> None:
    rows = [record(o, key=b"ab"[o % 2 : o % 2 + 1], timestamp=10 - o) for o in range(10)]
    kept, reducer = reduce([rows[:4], rows[4:]], Ranking())
    assert sorted(r["offset"] for r in kept) == [8, 9]
    assert reducer.folded == 8


def test_a_round_takes_no_more_records_than_its_budget() -> None:
    """One key, 100 records in chunks of 10, rounds of at most 30 records: each round keeps its
    latest record (the merge reduces across rounds); without the budget, one round."""
    rows = [record(o) for o in range(100)]
    chunks = [rows[at : at + 10] for at in range(0, 100, 10)]
    kept, reducer = reduce(chunks, Ranking(), records=30)
    assert [r["offset"] for r in kept] == [29, 59, 89, 99]
    assert reducer.folded == 96 and not reducer.one_per_key
    kept, reducer = reduce(chunks, Ranking())
    assert [r["offset"] for r in kept] == [99] and reducer.one_per_key


def test_timestamp_strategy_keeps_the_front_for_a_later_log_start() -> None:
    # Offsets 0..3 of one key, timestamps 9, 5, 7, 1: records 0, 2 and 3 can each still win.
    rows = [record(o, timestamp=t) for o, t in enumerate([9, 5, 7, 1])]
    kept, reducer = reduce([rows], Ranking(CompactionStrategy.TIMESTAMP.value))
    assert [r["offset"] for r in kept] == [0, 2, 3] and reducer.folded == 1


def test_a_topic_with_a_lag_passes_every_record_through() -> None:
    rows = [record(o) for o in range(5)]
    kept, reducer = reduce([rows], Ranking(lagged=True))
    assert [r["offset"] for r in kept] == list(range(5)) and reducer.folded == 0


keys = st.sampled_from([b"", b"a", b"b", b"a" * 9, b"a" * 17, b"b" * 17])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(keys, st.integers(0, 1), st.integers(-2, 2), st.booleans()), max_size=30
        ),
        max_size=4,
    )
)
def test_c_front_is_its_pure_twin(adds: list[list[tuple[bytes, int, int, bool]]]) -> None:
    fronts = (PyFront(), _cfront.CFront())
    offset = 0
    seen: list[tuple[bytes, int, bool]] = []
    for rows in adds:
        key_offsets = np.cumsum([0, *(len(k) for k, *_ in rows)]).astype(np.int32)
        data = b"".join(k for k, *_ in rows)
        r1 = np.array([r[1] for r in rows], np.int64)
        r2 = np.array([r[2] for r in rows], np.int64)
        offsets = np.arange(offset, offset + len(rows), dtype=np.int64)
        flags = np.array([r[3] for r in rows], np.uint8)
        offset += len(rows)
        added = [f.add(key_offsets, data, r1, r2, offsets, flags) for f in fronts]
        assert added[0] == added[1]
        seen += [(k, int(o), c) for (k, *_, c), o in zip(rows, offsets, strict=True)]
        assert len(fronts[0]) == len(fronts[1])
        ids = np.arange(len(seen), dtype=np.int64)
        alive = [f.alive(ids) for f in fronts]
        assert alive[0] == alive[1]
        candidates = [c for _, _, c in seen]
        on_front = [a for a, c in zip(alive[1], candidates, strict=True) if c]
        assert sum(on_front) == len(fronts[1])
        # This add's rows, as alive says (non-candidates: never taken off, flag 0 from add).
        now = [a and c for a, c in zip(alive[1][len(seen) - len(rows) :], flags, strict=True)]
        assert list(added[1]) == [int(x) for x in now]
    # An id that was never given out is refused.
    for f in fronts:
        with pytest.raises(ValueError, match="id -1: only"):
            f.alive(np.array([-1], np.int64))


def test_fronts_refuse_offsets_that_do_not_rise() -> None:
    for f in (PyFront(), _cfront.CFront()):
        two = np.array([0, 1, 2], np.int32)
        zeros = np.zeros(2, np.int64)
        f.add(two, b"ab", zeros, zeros, np.array([5, 6], np.int64), np.ones(2, np.uint8))
        with pytest.raises(ValueError, match="record 0: offset 6 is not after the one before"):
            f.add(two, b"ab", zeros, zeros, np.array([6, 7], np.int64), np.ones(2, np.uint8))


def test_a_segment_whose_offsets_fall_leaves_as_it_is_from_there() -> None:
    first = [record(o, key=b"a") for o in range(4)]
    damaged = [record(2, key=b"a"), record(9, key=b"a")]
    kept, reducer = reduce([first, damaged], Ranking())
    assert [r["offset"] for r in kept] == [3, 2, 9] and reducer.folded == 3
    assert reducer.earliest == 0 and not reducer.one_per_key
    for log_start in range(11):
        assert winners(kept, CompactionStrategy.OFFSET, log_start) == winners(
            first + damaged, CompactionStrategy.OFFSET, log_start
        )


def test_a_segment_whose_offsets_fall_from_the_start_is_not_one_per_key() -> None:
    kept, reducer = reduce([[record(3, key=b"a"), record(1, key=b"a")]], Ranking())
    assert [r["offset"] for r in kept] == [3, 1] and not reducer.one_per_key
    kept, reducer = reduce([[record(3, key=b"a"), record(5, key=b"a")]], Ranking(lagged=True))
    assert [r["offset"] for r in kept] == [3, 5] and reducer.one_per_key  # no candidate leaves


def test_a_second_pass_over_other_records_is_not_one_per_key() -> None:
    """Between the passes the log was rewritten (fewer records, as Kafka's cleaner leaves
    them), or could not be read again: what leaves may not be one per key."""
    rows = [record(o, key=b"k%d" % (o % 2000), value=b"v" * 2000) for o in range(4000)]
    for second in (rows[1:], rows[:-1], rows[:1000]):
        reducer = SegmentReducer(Ranking(), budget_bytes=1 << 20)
        for at in range(0, 4000, 500):
            list(reducer.add(batch(rows[at : at + 500])))
        list(reducer.finish())
        assert reducer.rescan
        again = WholeChunks(reducer).again
        for at in range(0, len(second), 500):
            again(batch(second[at : at + 500]))
        reducer.skip(len(rows) - len(second))
        assert reducer.rescanned and not reducer.one_per_key


def test_c_front_refuses_buffers_that_do_not_match() -> None:
    f = _cfront.CFront()
    one = np.zeros(1, np.int64)
    with pytest.raises(ValueError, match="1 records need 8 bytes of key offsets"):
        f.add(np.zeros(1, np.int32), b"", one, one, one, np.ones(1, np.uint8))
    with pytest.raises(ValueError, match=r"key 0: offsets 0\.\.5 outside 1 bytes of keys"):
        f.add(np.array([0, 5], np.int32), b"a", one, one, one, np.ones(1, np.uint8))
    with pytest.raises(ValueError, match="int64 column"):
        f.add(
            np.array([0, 1], np.int32), b"a", one, np.zeros(2, np.int64), one, np.ones(1, np.uint8)
        )


def test_a_segment_whose_survivors_do_not_fit_is_read_twice_and_still_reduced() -> None:
    """Kafka's cleaner holds offsets, not values, and reads a segment twice: so does the
    reducer once the rows on its fronts pass half its budget. Nothing but raw rows leaves in
    the first pass; the second keeps the latest record of each key, as one pass would."""
    keys = [b"key-%04d" % k for k in range(2000)]
    rows = [
        record(o, key=keys[o % 2000], value=b"v" * 2000, is_control=o == 3) for o in range(4000)
    ]
    chunks = [rows[at : at + 500] for at in range(0, 4000, 500)]
    reducer = SegmentReducer(Ranking(), budget_bytes=1 << 20)
    first = [b for c in chunks for b in reducer.add(batch(c))]
    first += reducer.finish()
    assert reducer.rescan and [r["offset"] for b in first for r in b.to_pylist()] == [3]
    again = WholeChunks(reducer).again
    second = [b for c in chunks for b in again(batch(c))]
    assert reducer.rescanned
    kept = sorted(r["offset"] for b in second for r in b.to_pylist())
    assert kept == list(range(2000, 4000))
    assert reducer.folded == 4000 - 1 - 2000 and reducer.one_per_key


def test_held_rows_near_the_quarter_are_copied_once_per_eighth_and_never_past_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows on the fronts that sit just under a quarter of the budget stay held (one pass):
    they are filtered again only once an eighth of the budget has come in since, not at every
    chunk (each refilter copies them all), and never take more than three eighths of it. Rows
    that outgrow the quarter are dropped before they take much more than it."""
    budget = 1 << 22
    refilters: list[int] = []
    refilter = SegmentReducer._refilter

    def counted(self: SegmentReducer) -> None:
        refilters.append(self._held_bytes)
        refilter(self)

    monkeypatch.setattr(SegmentReducer, "_refilter", counted)

    def held_peak(keys: int) -> tuple[SegmentReducer, int, int]:
        refilters.clear()
        rows = [record(o, key=b"k%05d" % (o % keys), value=b"v" * 1000) for o in range(16000)]
        reducer, peak, added = SegmentReducer(Ranking(), budget_bytes=budget), 0, 0
        for at in range(0, len(rows), 250):
            chunk = batch(rows[at : at + 250])
            added += chunk.nbytes
            list(reducer.add(chunk))
            peak = max(peak, reducer._held_bytes)
        list(reducer.finish())
        return reducer, peak, added

    row = batch([record(0, key=b"k00000", value=b"v" * 1000)]).nbytes
    chunk = 250 * row
    under = int(0.85 * (budget // 4) / row)  # keys whose latest rows take 85 % of the quarter
    reducer, peak, added = held_peak(under)
    assert not reducer.rescan and reducer.one_per_key
    assert budget // 4 < max(peak, *refilters) <= 3 * budget // 8 + chunk
    assert 4 <= len(refilters) <= 2 + added // (budget // 8)
    reducer, peak, _ = held_peak(4 * under)  # over the quarter: read twice
    assert reducer.rescan and max(peak, *refilters, 0) <= budget // 4 + chunk


def test_a_fronts_peak_counts_the_table_it_would_grow_into() -> None:
    """The reducer ends a round before a chunk whose keys could grow the table past its
    budget: for a moment the new table (twice the size) sits beside the old one."""
    front = _cfront.CFront()
    n = 700
    key_offsets = np.arange(0, 8 * n + 1, 8, dtype=np.int32)
    data = b"".join(b"k%07d" % i for i in range(n))
    zeros = np.zeros(n, np.int64)
    front.add(key_offsets, data, zeros, zeros, np.arange(n, dtype=np.int64), np.ones(n, np.uint8))
    assert front.peak_bytes(0) == front.peak_bytes(68) == front.nbytes  # 768 keys fit 1024
    # One more key than fit: a table of 2048 slots beside the 1024 there are.
    slot = (front.peak_bytes(69) - front.nbytes) / 2048
    assert slot == int(slot) and 32 <= slot <= 128
    # 2700 keys need 4096 slots: at the last growth, 2048 + 4096 of them.
    assert front.peak_bytes(2000) == front.nbytes - 1024 * slot + 6144 * slot
    with pytest.raises(ValueError, match="negative"):
        front.peak_bytes(-1)
