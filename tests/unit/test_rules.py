"""The per-record rules (``compaction/rules.py``, vectorized: the job's only copy) held to the
model's scalar oracle (``tests/support/model.py``), record by record, on generated headers."""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segcompact.compaction.rules import (
    RULE_FIELDS,
    Ranking,
    Rankings,
    classify,
    header_versions,
    ranks,
    tombstones,
)
from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig, parse_config
from segcompact.format.arrow import SCHEMA
from tests.support.model import header_version, is_tombstone, order_key

Headers = list[tuple[str, bytes | None]]
_LONG = struct.Struct(">q")

# Every kind of header value the rules meet: versions (negative, the extremes), values of a
# wrong length, the tombstone flag's true and false spellings, null.
header_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(_LONG.pack),
    st.sampled_from([-1, 0, 1, 2**63 - 1, -(2**63)]).map(_LONG.pack),
    st.binary(max_size=10),
    st.sampled_from([b"true", b"1", b"\x01", b"TRUE", b"no", b"", None]),
)
# Absent, repeated (the last counts), among other headers.
header_lists = st.lists(
    st.tuples(st.sampled_from(["v", "tombstone", "flag", "other", ""]), header_values), max_size=5
)
records = st.lists(
    st.tuples(
        header_lists,
        st.sampled_from([b"x", b"", None]),  # value
        st.integers(-128, 127),  # attributes
        st.integers(-(10**12), 10**12),  # timestamp, ms
        st.integers(0, 9).map(lambda n: n == 0),  # a control record
    ),
    max_size=25,
)


def topic(strategy: CompactionStrategy, mode: TombstoneMode) -> TopicConfig:
    return TopicConfig(
        compaction_strategy=strategy,
        strategy_header="v" if strategy is CompactionStrategy.HEADER else None,
        tombstone_mode=mode,
        tombstone_header="flag",
    )


TOPICS = [topic(s, m) for s in CompactionStrategy for m in TombstoneMode]


def chunk(rows: list[tuple[Headers, bytes | None, int, int, bool]]) -> pa.RecordBatch:
    """The columns the rules read, typed as the decoder's."""
    return pa.RecordBatch.from_pydict(
        {
            "offset": list(range(len(rows))),
            "timestamp": [ts * 1000 for _, _, _, ts, _ in rows],  # ms → the column's µs
            "value": [value for _, value, _, _, _ in rows],
            "headers": [[{"key": k, "value": v} for k, v in h] for h, *_ in rows],
            "attributes": [attributes for _, _, attributes, _, _ in rows],
            "is_control": [control for *_, control in rows],
        },
        schema=pa.schema(
            [
                pa.field("offset", pa.int64()),
                *(SCHEMA.field(n) for n in ("timestamp", "value", "headers", "attributes")),
                SCHEMA.field("is_control"),
            ]
        ),
    )


def oracle(config: TopicConfig, offset: int, row: tuple[Any, ...]) -> dict[str, Any]:
    """What the model says of one record: its rule columns, and its rank."""
    headers, value, attributes, ts, control = row
    header = config.compaction_strategy is CompactionStrategy.HEADER
    version = header_version(headers, config.strategy_header) if header and not control else None
    present = any(k == config.strategy_header for k, _ in headers)
    return {
        "order_value": version,
        "bad_version": header and not control and present and version is None,
        "tombstone": not control and is_tombstone(config, value, headers, attributes),
        "rank": order_key(config.compaction_strategy, offset, ts, version),
    }


@settings(max_examples=300, deadline=None)
@given(records, st.integers(0, 3))
def test_classify_and_ranks_are_the_models_rules_for_every_strategy_and_mode(
    rows: list[tuple[Headers, bytes | None, int, int, bool]], cut: int
) -> None:
    whole = chunk(rows)
    for config in TOPICS:
        ranking = Ranking.of(config)
        # A slice too: the rules read Arrow's buffers from the slice's offset.
        for part, first in ((whole, 0), (whole.slice(min(cut, len(rows))), min(cut, len(rows)))):
            got = classify(part, ranking)
            assert got.schema.names[-3:] == [f.name for f in RULE_FIELDS]
            r1, r2 = ranks(got, ranking)
            columns = {f.name: got.column(f.name).to_pylist() for f in RULE_FIELDS}
            for i, row in enumerate(rows[first:]):
                expected = oracle(config, first + i, row)
                actual = {name: values[i] for name, values in columns.items()}
                actual["rank"] = (int(r1[i]), int(r2[i]), first + i)
                assert actual == expected, (config, row)


@settings(max_examples=200, deadline=None)
@given(st.lists(header_lists, max_size=12), st.sampled_from(["v", "tombstone", "flag"]))
def test_header_versions_are_the_models_header_version(headers: list[Headers], name: str) -> None:
    column = pa.array(
        [[{"key": k, "value": v} for k, v in h] for h in headers], SCHEMA.field("headers").type
    )
    for sliced, rows in ((column, headers), (column[1:], headers[1:])):
        has, version, bad = header_versions(sliced, name)
        expect = [header_version(h, name) for h in rows]
        assert [int(v) if h else None for h, v in zip(has, version, strict=True)] == expect
        present = [any(k == name for k, _ in h) for h in rows]
        assert list(bad) == [p and e is None for p, e in zip(present, expect, strict=True)]


def test_tombstone_modes_on_hand_picked_records() -> None:
    """The three modes side by side: a null value, the flag header (the last counts), the bit."""
    rows: list[tuple[Headers, bytes | None, int, int, bool]] = [
        ([], None, 0, 0, False),
        ([("flag", b"true")], b"x", 0, 0, False),
        ([("flag", b"1"), ("flag", b"no")], b"x", 0, 0, False),
        ([], b"x", 1, 0, False),
        ([("flag", b"true")], None, 1, 0, True),  # a control record deletes nothing
    ]
    got = {
        mode: list(tombstones(chunk(rows), Ranking.of(topic(CompactionStrategy.OFFSET, mode))))
        for mode in TombstoneMode
    }
    assert got == {
        TombstoneMode.NULL_VALUE: [True, False, False, False, True],
        TombstoneMode.HEADER: [False, True, False, False, True],
        TombstoneMode.ATTRIBUTE: [False, False, False, True, True],
    }
    flags = classify(
        chunk(rows), Ranking.of(topic(CompactionStrategy.OFFSET, TombstoneMode.HEADER))
    )
    assert flags.column("tombstone").to_pylist() == [False, True, False, False, False]


def test_rankings_travel_as_json_and_bad_json_is_refused() -> None:
    config = parse_config(
        {
            "source": {"paths": ["/logs"]},
            "state": {"table": "/state"},
            "output": {"path": "/out"},
            "stream": {"checkpoint": "/chk"},
            "topics": {
                "h": {"compaction.strategy": "header", "compaction.strategy.header": "ver"},
                "lag": {"min.compaction.lag.ms": 1000},
                "flag": {
                    "compaction.tombstone.mode": "header",
                    "compaction.tombstone.header": "gone",
                },
            },
        },
        "test",
    )
    rankings = Rankings.of(config)
    assert Rankings.from_json(rankings.to_json()) == rankings
    assert rankings.for_topic("h") == Ranking("header", "ver", False)
    assert rankings.for_topic("flag") == Ranking(tombstone_mode="header", tombstone_header="gone")
    assert rankings.for_topic("lag").lagged and rankings.for_topic("other") == Ranking()
    with pytest.raises(ValueError, match="not a compaction ranking"):
        Rankings.from_json('{"topics": {}}')
    with pytest.raises(ValueError, match="'newest' is not"):
        Rankings.from_json('{"topics": {}, "default": {"strategy": "newest"}}')
    with pytest.raises(ValueError, match="'erase' is not"):
        Rankings.from_json('{"topics": {}, "default": {"tombstone_mode": "erase"}}')
    with pytest.raises(ValueError, match="a version header goes with the header strategy"):
        Rankings.from_json('{"topics": {}, "default": {"strategy": "header"}}')
    with pytest.raises(ValueError, match="a tombstone header goes with the header mode"):
        Ranking(tombstone_header="gone")
