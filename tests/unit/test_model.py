"""The reference model's semantics, case by case (DESIGN.md "Compaction semantics")."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.compaction.rules import is_young
from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig
from segcompact.format.control import marker as marker_record
from tests.support.model import (
    LogRecord,
    ReferenceModel,
    first_uncleanable_offset,
    header_version,
    is_tombstone,
    order_key,
)

V = struct.Struct(">q")


def rec(
    offset: int,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    *,
    ts: int = 0,
    headers: tuple[tuple[str, bytes | None], ...] = (),
    attributes: int = 0,
    pid: int = -1,
    txn: bool = False,
    control: bool = False,
    horizon: int | None = None,
    partition: int = 0,
    segment: int = 0,
) -> LogRecord:
    return LogRecord(
        "t",
        partition,
        offset,
        ts,
        0,
        key,
        value,
        headers,
        attributes,
        pid,
        txn,
        control,
        horizon,
        offset,
        segment,
    )


def marker(offset: int, pid: int, commit: bool) -> LogRecord:
    m = marker_record(offset, commit, timestamp=0)
    return rec(offset, m.key, m.value, pid=pid, txn=True, control=True)


def model(**kwargs: object) -> ReferenceModel:
    rules = TopicConfig(**kwargs)  # type: ignore[arg-type]
    return ReferenceModel(lambda _topic: rules)


def values(m: ReferenceModel) -> dict[bytes, bytes | None]:
    return {k[2]: r.value for k, r in m.state.items()}


def test_offset_strategy_highest_offset_wins_whatever_the_batch_order() -> None:
    m = model()
    m.apply([rec(5, value=b"new")], now_ms=0)
    m.apply([rec(3, value=b"old")], now_ms=0)  # arrives later, loses
    assert values(m) == {b"k": b"new"}


def test_timestamp_strategy_with_offset_tie_break() -> None:
    m = model(compaction_strategy=CompactionStrategy.TIMESTAMP)
    m.apply([rec(1, value=b"late-ts", ts=900), rec(2, value=b"early-ts", ts=100)], now_ms=0)
    assert values(m) == {b"k": b"late-ts"}
    m.apply([rec(3, value=b"tie", ts=900)], now_ms=0)
    assert values(m) == {b"k": b"tie"}


@pytest.mark.parametrize(
    ("a", "b", "winner"),
    [
        ((1, 7), (2, 5), "a"),  # both versioned: higher version wins
        ((1, 5), (2, 5), "b"),  # equal versions: higher offset
        ((1, 5), (2, None), "a"),  # only one versioned
        ((1, None), (2, None), "b"),  # neither: higher offset
        ((1, None), (2, b"bad"), "b"),  # not 8 bytes counts as absent
    ],
)
def test_header_strategy(a: tuple[int, object], b: tuple[int, object], winner: str) -> None:
    def mk(spec: tuple[int, object], name: bytes) -> LogRecord:
        offset, version = spec
        if version is None:
            headers: tuple[tuple[str, bytes | None], ...] = ()
        elif isinstance(version, bytes):
            headers = (("v", version),)
        else:
            headers = (("v", V.pack(version)),)  # type: ignore[arg-type]
        return rec(offset, value=name, headers=headers)

    m = model(compaction_strategy=CompactionStrategy.HEADER, strategy_header="v")
    m.apply([mk(b, b"b"), mk(a, b"a")], now_ms=0)
    assert values(m) == {b"k": winner.encode()}


def test_header_version_uses_last_occurrence_and_sign() -> None:
    headers = (("v", V.pack(1)), ("x", b""), ("v", V.pack(-2)))
    assert header_version(headers, "v") == -2
    assert order_key(CompactionStrategy.HEADER, 9, 0, -2) > order_key(
        CompactionStrategy.HEADER, 10, 0, None
    )


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), min_size=1, max_size=30),
    st.randoms(),
)
def test_result_does_not_depend_on_arrival_order(specs: list[tuple[int, int]], rnd: object) -> None:
    records = [rec(i, value=b"%d" % i, ts=ts) for i, (ts, _) in enumerate(specs)]
    shuffled = list(records)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    for strategy in CompactionStrategy:
        a, b = (model(compaction_strategy=strategy, strategy_header="v") for _ in "ab")
        a.apply(records, now_ms=0)
        for r in shuffled:
            b.apply([r], now_ms=0)
        assert a.state == b.state


@pytest.mark.parametrize(
    ("mode", "value", "headers", "attributes", "expected"),
    [
        (TombstoneMode.NULL_VALUE, None, (), 0, True),
        (TombstoneMode.NULL_VALUE, b"", (), 0, False),
        (TombstoneMode.HEADER, None, (), 0, False),  # a live null
        (TombstoneMode.HEADER, b"payload", (("tombstone", b"true"),), 0, True),
        (TombstoneMode.HEADER, b"x", (("tombstone", b"1"),), 0, True),
        (TombstoneMode.HEADER, b"x", (("tombstone", b"\x01"),), 0, True),
        (TombstoneMode.HEADER, b"x", (("tombstone", b"false"),), 0, False),
        (TombstoneMode.HEADER, b"x", (("tombstone", b"1"), ("tombstone", b"0")), 0, False),
        (TombstoneMode.ATTRIBUTE, b"x", (), 1, True),
        (TombstoneMode.ATTRIBUTE, None, (), 0, False),
    ],
)
def test_tombstone_modes(
    mode: TombstoneMode,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...],
    attributes: int,
    expected: bool,
) -> None:
    assert is_tombstone(TopicConfig(tombstone_mode=mode), value, headers, attributes) is expected


def test_tombstone_horizon_set_once_kept_from_input_and_expires() -> None:
    m = model(delete_retention_ms=1000)
    m.apply([rec(1, value=None), rec(2, b"other", None, horizon=5000)], now_ms=100)
    assert m.state[("t", 0, b"k")].delete_horizon == 1100
    assert m.state[("t", 0, b"other")].delete_horizon == 5000
    m.apply([rec(1, value=None)], now_ms=900)  # replay: the horizon does not move
    assert m.state[("t", 0, b"k")].delete_horizon == 1100
    m.expire(1099)
    assert len(m.state) == 2
    m.expire(1100)
    assert set(values(m)) == {b"other"}


def test_transactions_commit_abort_and_wait_across_batches() -> None:
    m = model()
    m.apply([rec(0, b"a", b"1", pid=7, txn=True), rec(1, b"b", b"1", pid=8, txn=True)], 0)
    assert values(m) == {}  # both undecided
    m.apply(
        [
            marker(2, 7, commit=True),
            marker(3, 8, commit=False),
            rec(4, b"c", b"1", pid=7, txn=True),
        ],
        0,
    )
    assert values(m) == {b"a": b"1"}
    assert [r.offset for rs in m.pending.values() for r in rs] == [4]
    m.apply([marker(5, 7, commit=False)], 0)
    assert values(m) == {b"a": b"1"}
    assert not any(m.pending.values())


def test_keyless_records_are_dropped_and_counted_and_log_start_is_honoured() -> None:
    m = model()
    m.apply([rec(0, None), rec(1, b"a"), rec(2, b"b")], 0)
    assert m.keyless[("t", 0)] == 1
    assert m.delete_records("t", 0, 2) == 2
    assert set(values(m)) == {b"b"}
    m.apply([rec(1, b"a")], 0)  # late input below the log start never re-enters
    assert set(values(m)) == {b"b"}
    assert m.delete_records("t", 0, 1) == 2  # never moves back


def test_young_means_within_the_lag_of_now_and_a_zero_lag_makes_nothing_young() -> None:
    assert is_young(5_001, now_ms=6_000, min_compaction_lag_ms=1_000)
    assert not is_young(5_000, now_ms=6_000, min_compaction_lag_ms=1_000)  # Kafka: ts > now-lag
    assert not is_young(9_999, now_ms=6_000, min_compaction_lag_ms=0)  # even a future one
    records = [(0, 100, 0), (1, 5_500, 0), (2, 100, 2), (3, 5_900, 3)]
    # The first young record's segment, not the record, is where cleaning stops.
    assert first_uncleanable_offset(records, 6_000, 1_000) == 0
    assert first_uncleanable_offset(records[2:], 6_000, 1_000) == 3
    assert first_uncleanable_offset(records, 7_000, 1_000) is None
    assert first_uncleanable_offset(records, 6_000, 0) is None


def test_records_younger_than_the_lag_stay_raw_with_their_segment_and_all_after() -> None:
    m = model(min_compaction_lag_ms=1_000)
    old = [
        rec(0, value=b"a0", ts=100),
        rec(1, b"j", b"b1", ts=200),
        rec(2, value=b"a2", ts=300),
    ]
    segment_3 = [rec(3, value=b"a3", ts=150, segment=3), rec(4, value=b"a4", ts=5_000, segment=3)]
    segment_5 = [rec(5, value=None, ts=200, segment=5)]  # old, but after a young record
    m.apply(old + segment_3 + segment_5, now_ms=5_500)
    assert values(m) == {b"k": b"a2", b"j": b"b1"}
    assert m.output("t", 0) == [
        (1, b"j", b"b1"),
        (2, b"k", b"a2"),
        (3, b"k", b"a3"),
        (4, b"k", b"a4"),
        (5, b"k", None),
    ]
    m.graduate(5_999)  # offset 4 is still within the lag
    assert sorted(m.young[("t", 0)]) == [3, 4, 5]
    m.graduate(6_000)
    assert not m.young
    assert m.state[("t", 0, b"k")].tombstone and m.output("t", 0) == [
        (1, b"j", b"b1"),
        (5, b"k", None),
    ]
    assert m.state[("t", 0, b"k")].delete_horizon == 6_000 + 86_400_000  # first compacted now


def test_log_start_purges_young_records_too() -> None:
    m = model(min_compaction_lag_ms=1_000)
    m.apply([rec(0, ts=900), rec(1, b"j", ts=900), rec(2, b"i", ts=900)], now_ms=1_000)
    assert sorted(m.young[("t", 0)]) == [0, 1, 2]
    m.delete_records("t", 0, 2)
    assert m.output("t", 0) == [(2, b"i", b"v")]
