"""Hypothesis strategies for records and batches shared by the unit tests."""

from __future__ import annotations

from hypothesis import strategies as st

from segcompact.format.record import Record

maybe_bytes = st.one_of(st.none(), st.binary(max_size=64))
headers = st.lists(
    st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=16))), max_size=4
).map(tuple)


@st.composite
def record_lists(draw: st.DrawFn, max_size: int = 20, keyed: bool = False) -> list[Record]:
    """Records with increasing offsets (gaps allowed) and arbitrary timestamps."""
    n = draw(st.integers(1, max_size))
    base = draw(st.integers(0, 2**40))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=n, max_size=n))
    base_ts = draw(st.integers(0, 2**41))
    records = []
    offset = base
    for gap in gaps:
        records.append(
            Record(
                offset=offset,
                timestamp=base_ts + draw(st.integers(-(2**31), 2**31)),
                key=draw(st.binary(max_size=32) if keyed else maybe_bytes),
                value=draw(maybe_bytes),
                headers=draw(headers),
                attributes=draw(st.integers(0, 1)),
            )
        )
        offset += gap
    return records
