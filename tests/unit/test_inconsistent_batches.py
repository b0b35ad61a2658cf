"""CRC-valid batches whose fields disagree with one another (offsets, counts, deltas, lengths,
attributes, control records, timestamps): each is a :class:`CorruptBatchError` naming file,
position and base offset, or decodes consistently, alike in the pure and the compiled decoder,
and what it decodes to reduces without an exception. Never another exception."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from segcompact.compaction.reduce import SegmentReducer
from segcompact.compaction.rules import Ranking
from segcompact.errors import CorruptBatchError
from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import Compression
from segcompact.format.batch import assemble_batch, build_batch
from segcompact.format.control import ABORT_KEY, COMMIT_KEY
from segcompact.format.record import Record, encode_record
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

GOOD = build_batch([Record(i, 1_000 + i, b"k%d" % i, b"v") for i in range(5)])
AFTER = 2**62 + 2**40  # past any poison batch's offsets: a good batch there
GOOD_AFTER = build_batch([Record(AFTER + i, 1_000, b"k", b"w") for i in range(3)])


@dataclass(frozen=True)
class Poison:
    batch: bytes
    base_offset: int
    count: int


small = st.integers(-3, 12)
int32 = st.integers(INT32_MIN, INT32_MAX)
int64 = st.integers(INT64_MIN, INT64_MAX)


@st.composite
def poison(draw: st.DrawFn) -> Poison:
    """A batch after :data:`GOOD` whose header, records and body may disagree; its CRC holds."""
    base = draw(st.sampled_from([5, 6, 3, 0]) | st.integers(0, 2**62))
    last_delta = draw(st.integers(0, 12) | small | int32)
    n = draw(st.integers(0, 5))
    deltas = draw(st.lists(small | int32, min_size=n, max_size=n))
    if draw(st.booleans()):  # mostly a batch Kafka could write, then one field off
        deltas = sorted({max(0, d) for d in deltas})
        n = len(deltas)
    base_ts = draw(st.integers(0, 2**42) | int64)
    ts_deltas = draw(st.lists(st.integers(-1000, 1000) | int64, min_size=n, max_size=n))
    control = draw(st.booleans())
    keys = st.sampled_from([COMMIT_KEY, ABORT_KEY, b"\x00\x01\x00\x07", b"\x00", None, b"k"])
    body = b""
    for delta, ts_delta in zip(deltas, ts_deltas, strict=True):
        record = Record(
            offset=base + delta,
            timestamp=base_ts + ts_delta,
            key=draw(keys if control else st.none() | st.binary(max_size=4)),
            value=draw(st.none() | st.binary(max_size=4)),
            attributes=draw(st.integers(0, 255)),
        )
        try:
            body += encode_record(record, base, base_ts)
        except ValueError:  # a timestamp delta past 64 bits: not encodable
            body += encode_record(Record(base, base_ts, b"k", b"v"), base, base_ts)
    match draw(st.sampled_from(["as is", "as is", "cut", "more"])):
        case "cut":
            body = body[: draw(st.integers(0, max(0, len(body) - 1)))]
        case "more":
            body += draw(st.binary(min_size=1, max_size=4))
    count = n + draw(st.sampled_from([0, 0, 0, -1, 1, INT32_MAX - n]))
    codec = draw(st.sampled_from(list(Compression)))
    bits = draw(st.integers(0, 0xFFFF)) & ~0x07 & ~0x20
    attributes = bits | int(codec) | (0x20 if control else 0)
    batch = assemble_batch(
        body,
        count,
        base_offset=base,
        last_offset=base + max(INT32_MIN, min(INT32_MAX, last_delta)),
        base_timestamp=base_ts,
        max_timestamp=draw(int64 | st.just(base_ts)),
        attributes=struct.unpack(">h", struct.pack(">H", attributes))[0],
        producer_id=draw(st.sampled_from([-1, 7])),
        producer_epoch=draw(st.sampled_from([-1, 0])),
        base_sequence=draw(st.sampled_from([-1, 0])),
    )
    return Poison(batch, base, count)


def _decode(path: Path, pure: bool) -> tuple[pa.Table, CorruptBatchError | None]:
    chunks: list[pa.RecordBatch] = []
    try:
        for chunk in decode_segment(
            SegmentReader(LocalInputFile(str(path))), "t", 0, chunk_records=4, pure=pure
        ):
            chunks.append(chunk)
    except CorruptBatchError as e:
        return pa.Table.from_batches(chunks, schema=chunks[0].schema), e
    return pa.Table.from_batches(chunks), None


def _reduce(rows: pa.Table) -> None:
    reducer = SegmentReducer(Ranking(), budget_bytes=1 << 20)
    for chunk in rows.to_batches(max_chunksize=3):
        with_base = chunk.append_column("segment_base", pa.repeat(pa.scalar(0), chunk.num_rows))
        list(reducer.add(with_base))
    list(reducer.finish())


# The case that stopped every partition (issue 39): lastOffsetDelta 2, a record at delta 5000.
PAST_THE_BATCH = Poison(
    assemble_batch(
        b"".join(
            encode_record(Record(100 + d, 2_000, b"k", b"v"), 100, 2_000) for d in (0, 1, 5000)
        ),
        3,
        base_offset=100,
        last_offset=102,
        base_timestamp=2_000,
        max_timestamp=2_000,
    ),
    100,
    3,
)


@given(case=poison())
@example(case=PAST_THE_BATCH)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_an_inconsistent_batch_is_corrupt_or_decodes_consistently(
    tmp_path_factory: pytest.TempPathFactory, case: Poison
) -> None:
    path = tmp_path_factory.mktemp("seg") / f"{0:020d}.log"
    path.write_bytes(GOOD + case.batch + GOOD_AFTER)
    pure, pure_error = _decode(path, pure=True)
    compiled, compiled_error = _decode(path, pure=False)
    assert compiled.equals(pure)
    assert str(compiled_error) == str(pure_error)
    event("corrupt" if compiled_error else "decoded")
    if compiled_error is not None:
        event(" ".join(compiled_error.reason.split()[:3]))
        # Where: the file, the batch's position, its base offset; what came before is kept.
        assert compiled_error.file == str(path)
        assert compiled_error.position == len(GOOD)
        assert compiled_error.base_offset == case.base_offset
        assert compiled.column("offset").to_pylist() == list(range(5))
    else:
        offsets = compiled.column("offset").to_pylist()
        assert offsets == sorted(set(offsets))  # rising: no record collides with another
        first = compiled.column("batch_base_offset").to_pylist()
        last = compiled.column("batch_last_offset").to_pylist()
        assert all(b <= o <= e for o, b, e in zip(offsets, first, last, strict=True))
        assert first.count(case.base_offset) == case.count  # as many as the header says
        assert offsets[-3:] == [AFTER, AFTER + 1, AFTER + 2]
    _reduce(compiled)


def test_the_batch_past_its_last_offset_delta_names_where_and_why(tmp_path: Path) -> None:
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(GOOD + PAST_THE_BATCH.batch)
    _, error = _decode(path, pure=False)
    assert error is not None
    assert str(error) == (
        f"corrupt batch ({path}, position {len(GOOD)}, base offset 100): record 2: offset delta "
        "5000 is past the batch's last offset delta 2"
    )
