"""The column builders: the pure-Python reference and its compiled twin, on the same inputs.

Each builder is checked against columns laid out directly from the ``Record`` objects that were
encoded (not from a decoder), and the two are compared with each other on corrupt and mutated
payloads, error messages included. The C builder is compiled by ``make``; a missing one fails.
"""

from __future__ import annotations

import dataclasses
import logging
import struct
import sys
import threading
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segcompact.errors import CorruptBatchError
from segcompact.format import _crecords  # a missing extension fails here, on purpose
from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import Compression, TimestampType
from segcompact.format.batch import build_batch
from segcompact.format.columns import (
    MAX_TIMESTAMP_MS,
    ColumnBuffers,
    PyColumnBuilder,
    column_builder,
)
from segcompact.format.record import Record, encode_records, iter_records
from segcompact.format.segment import SegmentReader
from segcompact.format.varint import encode_varint, encode_varlong
from segcompact.storage import LocalInputFile

CColumnBuilder = _crecords.CColumnBuilder
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

Builder = PyColumnBuilder | _crecords.CColumnBuilder
MAKERS = [pytest.param(PyColumnBuilder, id="py"), pytest.param(CColumnBuilder, id="c")]
# Each builder with the error it raises for corrupt data.
BUILDERS = [
    pytest.param(PyColumnBuilder, CorruptBatchError, id="py"),
    pytest.param(CColumnBuilder, ValueError, id="c"),
]


# --- Expected columns, laid out from records -----------------------------------------------


class _Binary:
    def __init__(self) -> None:
        self.offsets = array("i", [0])
        self.data = bytearray()
        self.valid = bytearray()

    def add(self, value: bytes | None) -> None:
        self.valid.append(value is not None)
        self.data += value or b""
        self.offsets.append(len(self.data))


def expected(appends: Sequence[tuple[Sequence[Record], int]]) -> ColumnBuffers:
    """The columns of ``(records, batch index)`` appends, little-endian as Arrow lays them out."""
    n = sum(len(records) for records, _ in appends)
    rows = [(r, index) for records, index in appends for r in records]
    key, value, hkey, hvalue = _Binary(), _Binary(), _Binary(), _Binary()
    header_offsets = [0]
    for r, _ in rows:
        key.add(r.key)
        value.add(r.value)
        for k, v in r.headers:
            hkey.add(k.encode("utf-8"))
            hvalue.add(v)
        header_offsets.append(len(hkey.valid))
    return ColumnBuffers(
        records=n,
        offset=struct.pack(f"<{n}q", *(r.offset for r, _ in rows)),
        timestamp=struct.pack(f"<{n}q", *(r.timestamp for r, _ in rows)),
        attributes=bytes(r.attributes for r, _ in rows),
        batch=struct.pack(f"<{n}i", *(index for _, index in rows)),
        key_offsets=key.offsets.tobytes(),
        key_data=bytes(key.data),
        key_valid=bytes(key.valid),
        value_offsets=value.offsets.tobytes(),
        value_data=bytes(value.data),
        value_valid=bytes(value.valid),
        header_offsets=struct.pack(f"<{n + 1}i", *header_offsets),
        header_count=len(hkey.valid),
        hkey_offsets=hkey.offsets.tobytes(),
        hkey_data=bytes(hkey.data),
        hvalue_offsets=hvalue.offsets.tobytes(),
        hvalue_data=bytes(hvalue.data),
        hvalue_valid=bytes(hvalue.valid),
    )


# --- Raw records: any field value, including ones encode_record cannot produce -------------


def sized(value: bytes | int | None) -> bytes:
    """A length-prefixed field; an int is written as a bare (maybe lying) length."""
    if value is None:
        return encode_varint(-1)
    if isinstance(value, int):
        return encode_varint(value)
    return encode_varint(len(value)) + value


def raw_record(
    key: bytes | int | None = b"k",
    value: bytes | int | None = b"v",
    headers: Sequence[tuple[bytes | int | None, bytes | int | None]] = (),
    *,
    header_count: bytes | None = None,
    ts_delta: bytes = b"\x00",
    off_delta: bytes = b"\x00",
    extra: bytes = b"",
    length: bytes | None = None,
) -> bytes:
    body = bytearray(b"\x00" + ts_delta + off_delta + sized(key) + sized(value))
    body += encode_varint(len(headers)) if header_count is None else header_count
    for k, v in headers:
        body += sized(k) + sized(v)
    body += extra
    return (encode_varint(len(body)) if length is None else length) + bytes(body)


GOOD = raw_record(b"key", b"value", [(b"h", b"x"), (b"n", None)])
GOOD_RECORDS = [Record(0, 0, b"key", b"value", (("h", b"x"), ("n", None)))]
SECOND = encode_varint(1)  # the offset delta of a record after GOOD

# (payload, count, what iter_records says): each breaks one rule of iter_records.
CORRUPT = {
    "count too large": (GOOD, 4, "records count 4 is larger than 22 bytes"),
    "count negative": (GOOD, -1, "records count -1 is larger than"),
    "count huge": (GOOD, 2**70, f"records count {2**70} is larger than"),
    "truncated": ((GOOD + GOOD)[:-1], 2, "record 1 claims"),
    "truncated in a varint": (
        GOOD + raw_record(header_count=b"\x80"),
        2,
        "varint runs past the end of the data",
    ),
    "varint too long": (b"\xff" * 5 + b"\x00" * 10, 1, "varint longer than 5 bytes at byte 0"),
    "varint past 32 bits": (b"\xff\xff\xff\xff\x1f" + b"\x00" * 4, 1, "does not fit in 32 bits"),
    "varlong too long": (
        raw_record(ts_delta=b"\x80" * 10 + b"\x00"),
        1,
        "varint longer than 10 bytes at byte 2",
    ),
    "record too short": (b"\x0a" + b"\x00" * 6, 1, "record 0 claims 5 bytes"),
    "record length negative": (b"\x01" + b"\x00" * 6, 1, "record 0 claims -1 bytes"),
    "record past batch": (raw_record(length=encode_varint(100)), 1, "record 0 claims 100 bytes"),
    "key length negative": (raw_record(key=-2), 1, "key length -2 is negative"),
    "key past record": (raw_record(key=100), 1, "key of 100 bytes runs past its record"),
    "value length negative": (raw_record(value=-7), 1, "value length -7 is negative"),
    "value past record": (raw_record(value=3), 1, "value of 3 bytes runs past its record"),
    "headers count too large": (
        raw_record(header_count=encode_varint(5), extra=b"\x00" * 4),
        1,
        "record 0 claims 5 headers in 4 bytes",
    ),
    "headers count negative": (
        raw_record(header_count=encode_varint(-1)),
        1,
        "record 0 claims -1 headers in 0 bytes",
    ),
    "header key null": (raw_record(headers=[(None, b"x")]), 1, "header key is null"),
    "header key length negative": (
        raw_record(headers=[(-3, b"x")]),
        1,
        "header key length -3 is negative",
    ),
    "header value past record": (
        raw_record(headers=[(b"h", 9)]),
        1,
        "header value of 9 bytes runs past its record",
    ),
    "header value length negative": (
        raw_record(headers=[(b"h", -2)]),
        1,
        "header value length -2 is negative",
    ),
    "bytes left in record": (
        raw_record(extra=b"\x00"),
        1,
        "record 0 has 1 bytes past its last field",
    ),
    "fields past record end": (
        raw_record(length=encode_varint(7)) + GOOD,
        2,
        "record 0 claims 0 headers in -1 bytes",
    ),
    "bytes after records": (
        GOOD + b"\x00",
        1,
        "1 bytes remain after the 1 records the batch declares",
    ),
    "offset delta negative": (
        raw_record(off_delta=encode_varint(-1)),
        1,
        "record 0: offset delta -1 is negative",
    ),
    "offset deltas not rising": (
        GOOD + GOOD,
        2,
        "record 1: offset delta 0 is not above the previous record's 0",
    ),
    "offset delta past the batch": (
        raw_record(off_delta=encode_varint(5000)),
        1,
        "record 0: offset delta 5000 is past the batch's last offset delta 0",
    ),
}


def python_reason(payload: bytes, count: int) -> str:
    with pytest.raises(CorruptBatchError) as e:
        list(iter_records(payload, count, 0, 0, 0))
    return e.value.reason


def test_the_compiled_builder_is_the_default() -> None:
    assert isinstance(column_builder(), CColumnBuilder)
    assert isinstance(column_builder(pure=True), PyColumnBuilder)


# --- Valid records ---------------------------------------------------------------------------


header_keys = st.text(max_size=8) | st.sampled_from(["", "é", "日本語", "\U0001f600", "\x00"])
headers = st.lists(st.tuples(header_keys, st.none() | st.binary(max_size=8)), max_size=3).map(tuple)
maybe_bytes = st.none() | st.binary(max_size=24)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[Record], int, int]:
    """Records with offsets anywhere in int64 that their deltas can reach, and timestamps
    anywhere a microsecond timestamp holds (the builders refuse the rest)."""
    n = draw(st.integers(0, 8))
    off_deltas = sorted(
        draw(st.lists(st.integers(0, INT32_MAX), min_size=n, max_size=n, unique=True))
    )
    low = INT64_MIN - min(off_deltas, default=0)
    high = INT64_MAX - max(off_deltas, default=0)
    base_offset = draw(st.integers(max(low, INT64_MIN), min(high, INT64_MAX)))
    base_ts = draw(st.integers(INT64_MIN, INT64_MAX))
    lowest, highest = (
        max(-MAX_TIMESTAMP_MS, base_ts + INT64_MIN),
        min(MAX_TIMESTAMP_MS, base_ts + INT64_MAX),
    )
    ts = st.integers(lowest, highest) if lowest <= highest else st.just(base_ts)
    records = [
        Record(
            offset=base_offset + delta,
            timestamp=draw(ts),
            key=draw(maybe_bytes),
            value=draw(maybe_bytes),
            headers=draw(headers),
            attributes=draw(st.integers(0, 255)),
        )
        for delta in off_deltas
    ]
    return records, base_offset, base_ts


def last_delta(records: Sequence[Record], base_offset: int) -> int:
    """The last offset delta of a batch that ends at its last record."""
    return records[-1].offset - base_offset if records else 0


@pytest.mark.parametrize("make", MAKERS)
@given(appends=st.lists(batches(), max_size=5), indexes=st.lists(st.integers(0, INT32_MAX)))
@settings(deadline=None)
def test_columns_of_encoded_records(
    make: Callable[[], Builder],
    appends: list[tuple[list[Record], int, int]],
    indexes: list[int],
) -> None:
    builder = make()
    done: list[tuple[list[Record], int]] = []
    for i, (records, base_offset, base_ts) in enumerate(appends):
        index = indexes[i] if i < len(indexes) else i
        payload = encode_records(records, base_offset, base_ts)
        builder.append(
            payload, len(records), base_offset, base_ts, index, last_delta(records, base_offset)
        )
        done.append((records, index))
        assert len(builder) == sum(len(r) for r, _ in done)
    want = expected(done)
    assert builder.nbytes == sum(
        len(b) for b in (want.key_data, want.value_data, want.hkey_data, want.hvalue_data)
    )
    assert builder.finish() == want
    assert (len(builder), builder.nbytes) == (0, 0)
    assert builder.finish() == expected([])


@pytest.mark.parametrize("make", MAKERS)
@given(keys=st.lists(st.binary(max_size=12), min_size=1, max_size=6))
def test_header_keys_decode_as_python_does(make: Callable[[], Builder], keys: list[bytes]) -> None:
    """Invalid UTF-8 in a header key becomes U+FFFD per maximal ill-formed subpart."""
    payload = raw_record(headers=[(k, None) for k in keys])
    builder = make()
    builder.append(payload, 1, 0, 0, 0, 0)
    decoded = tuple((k.decode("utf-8", "replace"), None) for k in keys)
    assert builder.finish() == expected([([Record(0, 0, b"k", b"v", decoded)], 0)])


@pytest.mark.parametrize(
    "key",
    [
        b"\xff",
        b"\xc0\x80",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xe2\x82",
        b"\xf0\x9f\x98",
        b"a\xe2\x82b",
        b"\xf0\x9f\x98\x80\x80",
        b"\xe0\x9f\xbf",
        b"\xf5\x80",
    ],
)
def test_ill_formed_header_keys(key: bytes) -> None:
    """Overlongs, surrogates, past U+10FFFF, truncated sequences: as bytes.decode replaces."""
    builders = [PyColumnBuilder(), CColumnBuilder()]
    for b in builders:
        b.append(raw_record(headers=[(key, b"")]), 1, 0, 0, 0, 0)
    py, c = (b.finish() for b in builders)
    assert c == py
    assert c.hkey_data == key.decode("utf-8", "replace").encode("utf-8")


def stored(record: Record, values: bool, headers: bool) -> Record:
    """What a builder made with ``values`` and ``headers`` keeps of a record."""
    value = record.value if values or record.value is None else b""
    return dataclasses.replace(record, value=value, headers=record.headers if headers else ())


@pytest.mark.parametrize("make", MAKERS)
@given(
    appends=st.lists(batches(), max_size=5),
    values=st.booleans(),
    headers=st.booleans(),
    flags=st.lists(st.none() | st.lists(st.integers(0, 255), min_size=8, max_size=8), max_size=5),
)
@settings(deadline=None)
def test_what_a_builder_stores_is_the_records_it_keeps_as_its_mode_says(
    make: Callable[..., Builder],
    appends: list[tuple[list[Record], int, int]],
    values: bool,
    headers: bool,
    flags: list[list[int] | None],
) -> None:
    """Both builders (so each the other's twin) store exactly the records kept, each with its
    value's validity alone without ``values`` and no header without ``headers``."""
    builder = make(values=values, headers=headers)
    done: list[tuple[list[Record], int]] = []
    for i, (records, base_offset, base_ts) in enumerate(appends):
        keep = flags[i] if i < len(flags) else None
        payload = encode_records(records, base_offset, base_ts)
        args = (payload, len(records), base_offset, base_ts, i, last_delta(records, base_offset))
        if keep is None:
            builder.append(*args)
        else:
            builder.append(*args, keep=bytes(keep[: len(records)]))
        kept = [r for j, r in enumerate(records) if keep is None or keep[j]]
        done.append(([stored(r, values, headers) for r in kept], i))
        assert len(builder) == sum(len(r) for r, _ in done)
    assert builder.finish() == expected(done)


@pytest.mark.parametrize("make", MAKERS)
def test_keep_flags_must_match_the_records(make: Callable[[], Builder]) -> None:
    builder = make()
    with pytest.raises(ValueError, match="keep holds 2 flags for 1 records"):
        builder.append(GOOD, 1, 0, 0, 0, 0, keep=b"\1\1")
    builder.append(GOOD, 1, 0, 0, 0, 0, keep=b"\0")
    assert len(builder) == 0


@pytest.mark.parametrize("make", MAKERS)
def test_keyword_arguments_and_bytearray(make: Callable[[], Builder]) -> None:
    builder = make()
    builder.append(bytearray(GOOD), 1, 0, 0, 0, 0)
    builder.append(
        payload=GOOD, count=1, base_offset=0, base_timestamp=0, batch=1, last_offset_delta=0
    )
    assert builder.finish() == expected([(GOOD_RECORDS, 0), (GOOD_RECORDS, 1)])


def test_compiled_builder_takes_any_buffer() -> None:
    """PyColumnBuilder's payload is bytes (a memoryview's header keys have no decode)."""
    builder = CColumnBuilder()
    builder.append(memoryview(b"..." + GOOD)[3:], 1, 0, 0, 0, 0)
    builder.append(array("B", GOOD), 1, 0, 0, 1, 0)
    assert builder.finish() == expected([(GOOD_RECORDS, 0), (GOOD_RECORDS, 1)])


def test_decodes_without_the_gil_in_threads() -> None:
    """Payloads big enough to release the GIL, decoded by builders in parallel threads."""
    records = [Record(i, 1000 + i, b"k%d" % i, b"v" * 100, (("h", b"x"),)) for i in range(2000)]
    payload = encode_records(records, 0, 1000)
    results: list[ColumnBuffers] = []

    def work() -> None:
        b = CColumnBuilder()
        for index in range(5):
            b.append(payload, len(records), 0, 1000, index, len(records) - 1)
        results.append(b.finish())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = expected([(records, index) for index in range(5)])
    assert results == [want] * 4


# --- Corrupt records -------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "error"), BUILDERS)
@pytest.mark.parametrize(("payload", "count", "reason"), CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_batch_raises_and_keeps_earlier_appends(
    make: Callable[[], Builder],
    error: type[Exception],
    payload: bytes,
    count: int,
    reason: str,
) -> None:
    assert reason in python_reason(payload, count)  # the vector breaks the rule it names
    builder = make()
    builder.append(GOOD, 1, 0, 0, 0, 0)
    with pytest.raises(error) as e:
        builder.append(payload, count, 0, 0, 1, 0)
    assert str(e.value)
    assert (len(builder), builder.nbytes) == (1, len(b"keyvaluehxn"))
    builder.append(GOOD, 1, 0, 0, 2, 0)
    assert builder.finish() == expected([(GOOD_RECORDS, 0), (GOOD_RECORDS, 2)])


@pytest.mark.parametrize(("payload", "count", "reason"), CORRUPT.values(), ids=CORRUPT.keys())
def test_compiled_messages_match_python(payload: bytes, count: int, reason: str) -> None:
    with pytest.raises(ValueError) as e:
        CColumnBuilder().append(payload, count, 0, 0, 0, 0)
    assert str(e.value) == python_reason(payload, count)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """A valid payload with a few bytes replaced, inserted or deleted, maybe a wrong count and
    maybe a last offset delta below its records'."""
    records, base_offset, base_ts = draw(batches())
    last = max(0, last_delta(records, base_offset) - draw(st.sampled_from([0, 0, 0, 1])))
    data = bytearray(encode_records(records, base_offset, base_ts))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["set", "insert", "delete", "truncate"]))
        if op == "set" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 3))]
        else:
            del data[at:]
    count = len(records) + draw(st.sampled_from([0, 0, 0, -1, 1]))
    return bytes(data), count, last


@given(case=mutated(), base_offset=st.integers(-(2**40), 2**40), base_ts=st.integers(0, 2**42))
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_payloads_decode_or_fail_alike(
    case: tuple[bytes, int, int], base_offset: int, base_ts: int
) -> None:
    payload, count, last = case
    py, c = PyColumnBuilder(), CColumnBuilder()
    try:
        records = list(iter_records(payload, count, base_offset, base_ts, last))
    except CorruptBatchError as e:
        with pytest.raises(ValueError) as raised:
            c.append(payload, count, base_offset, base_ts, 0, last)
        assert str(raised.value) == e.reason
        return
    # Values past int64 fail differently in the two builders (see the tests below).
    if not all(INT64_MIN <= r.timestamp - base_ts <= INT64_MAX for r in records):
        with pytest.raises(ValueError, match="does not fit in 64 bits"):
            c.append(payload, count, base_offset, base_ts, 0, last)
        return
    if not all(INT64_MIN <= v <= INT64_MAX for r in records for v in (r.offset, r.timestamp)):
        with pytest.raises(ValueError, match="overflows 64 bits"):
            c.append(payload, count, base_offset, base_ts, 0, last)
        return
    if not all(-MAX_TIMESTAMP_MS <= r.timestamp <= MAX_TIMESTAMP_MS for r in records):
        with pytest.raises(CorruptBatchError) as py_error:
            py.append(payload, count, base_offset, base_ts, 0, last)
        with pytest.raises(ValueError) as c_error:
            c.append(payload, count, base_offset, base_ts, 0, last)
        assert str(c_error.value) == str(py_error.value)
        return
    py.append(payload, count, base_offset, base_ts, 0, last)
    c.append(payload, count, base_offset, base_ts, 0, last)
    assert c.finish() == py.finish()


# --- Where the builders part: values PyColumnBuilder cannot store ----------------------------


def test_varlong_past_64_bits_is_corrupt() -> None:
    """Kafka's writers never produce one; both decoders refuse it once the batch is read."""
    payload = raw_record(ts_delta=b"\xff" * 9 + b"\x7f")
    with pytest.raises(CorruptBatchError, match="varlong at byte 2 does not fit in 64 bits"):
        list(iter_records(payload, 1, 0, 0, 0))
    with pytest.raises(ValueError, match="varlong at byte 2 does not fit in 64 bits"):
        CColumnBuilder().append(payload, 1, 0, 0, 0, 0)


@pytest.mark.parametrize(
    ("make", "error"),
    [
        pytest.param(PyColumnBuilder, CorruptBatchError, id="py"),
        pytest.param(CColumnBuilder, ValueError, id="c"),
    ],
)
@pytest.mark.parametrize(
    ("base_offset", "base_ts", "record"),
    [
        (INT64_MAX, 0, raw_record(off_delta=SECOND)),
        (0, INT64_MAX, raw_record(ts_delta=encode_varlong(1), off_delta=SECOND)),
        (0, INT64_MIN, raw_record(ts_delta=encode_varlong(INT64_MIN), off_delta=SECOND)),
    ],
    ids=["offset above", "timestamp above", "timestamp below"],
)
def test_int64_overflow_raises_and_keeps_earlier_appends(
    make: Callable[[], Builder],
    error: type[Exception],
    base_offset: int,
    base_ts: int,
    record: bytes,
) -> None:
    """An absolute offset or timestamp past int64 (base + delta) cannot be stored (offset
    deltas are never negative: no offset falls below int64)."""
    builder = make()
    builder.append(GOOD, 1, 0, 0, 0, 0)
    with pytest.raises(error) as e:
        builder.append(GOOD + record, 2, base_offset, base_ts, 1, 1)
    assert str(e.value)
    assert builder.finish() == expected([(GOOD_RECORDS, 0)])


@pytest.mark.parametrize(
    ("make", "error"), [(PyColumnBuilder, CorruptBatchError), (CColumnBuilder, ValueError)]
)
def test_int64_overflow_message(make: Callable[[], Builder], error: type[Exception]) -> None:
    payload = GOOD + raw_record(off_delta=SECOND)
    with pytest.raises(error, match=f"record 1: base offset {INT64_MAX} \\+ delta 1 over"):
        make().append(payload, 2, INT64_MAX, 0, 0, 1)


@pytest.mark.parametrize("ts", [MAX_TIMESTAMP_MS + 1, -MAX_TIMESTAMP_MS - 1])
def test_a_timestamp_no_microsecond_column_holds_is_refused_alike(ts: int) -> None:
    """Found by fuzzing the segment reader: such a timestamp wrapped around silently in the
    conversion to Spark's microseconds (an int64 product)."""
    payload = GOOD + raw_record(ts_delta=encode_varlong(ts), off_delta=SECOND)
    message = (
        f"record 1: timestamp {ts} ms is out of range (a timestamp in microseconds holds "
        f"+-{MAX_TIMESTAMP_MS} ms)"
    )
    with pytest.raises(CorruptBatchError) as py_error:
        PyColumnBuilder().append(payload, 2, 0, 0, 0, 1)
    with pytest.raises(ValueError) as c_error:
        CColumnBuilder().append(payload, 2, 0, 0, 0, 1)
    assert str(py_error.value) == str(c_error.value) == message
    # The reference decoder, as dump uses it, still reads the record as Kafka wrote it.
    assert [r.timestamp for r in iter_records(payload, 2, 0, 0, 1)] == [0, ts]


# --- Whole segments to Arrow -----------------------------------------------------------------


def _segment(compression: Compression) -> list[bytes]:
    def records(start: int, n: int) -> list[Record]:
        return [
            Record(
                offset=start + 2 * i,
                timestamp=1_700_000_000_000 + (i * 37) % 11 - 5,
                key=None if i % 7 == 3 else b"key-%d" % (i % 5),
                value=None if i % 6 == 5 else b"value %d " % i * (i % 4),
                headers=(("trace", b"t%d" % i), ("é", None))[: i % 3],
                attributes=i % 2,
            )
            for i in range(n)
        ]

    return [
        build_batch(records(0, 30), compression=compression),
        build_batch(records(100, 1), compression=compression, base_offset=100, last_offset=140),
        build_batch(
            records(200, 12),
            compression=compression,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            max_timestamp=1_800_000_000_000,
        ),
        build_batch(
            records(300, 9),
            compression=compression,
            producer_id=77,
            producer_epoch=3,
            base_sequence=5,
            is_transactional=True,
        ),
        build_batch([], compression=compression, base_offset=400, last_offset=410),
        build_batch(records(500, 20), compression=compression, delete_horizon_ms=1_600_000_000_000),
    ]


@pytest.mark.parametrize("compression", list(Compression), ids=lambda c: c.label)
@pytest.mark.parametrize("chunk_records", [7, 1 << 18])
def test_decode_segment_pure_and_compiled_agree(
    tmp_path: Path, compression: Compression, chunk_records: int
) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(_segment(compression)))

    def table(pure: bool) -> pa.Table:
        reader = SegmentReader(LocalInputFile(path))
        chunks = list(decode_segment(reader, "t", 3, chunk_records=chunk_records, pure=pure))
        return pa.Table.from_batches(chunks)

    pure, compiled = table(True), table(False)
    assert compiled.num_rows == 30 + 1 + 12 + 9 + 20
    assert compiled.equals(pure)


def test_without_the_c_decoder_the_pure_one_runs_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from segcompact.format import columns

    monkeypatch.setitem(sys.modules, "segcompact.format._crecords", None)  # not built
    columns.warn_pure.cache_clear()
    with caplog.at_level(logging.WARNING, logger="segcompact"):
        first, second = columns.column_builder(), columns.column_builder()
    columns.warn_pure.cache_clear()
    assert isinstance(first, columns.PyColumnBuilder) and isinstance(
        second, columns.PyColumnBuilder
    )
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "C extensions (the record decoder, the compaction front) are not built" in (
        caplog.records[0].message
    )


def test_the_c_decoder_is_built_for_the_stable_abi() -> None:
    # One wheel (cp311-abi3) for every Python from 3.11: a runtime's Python need not be the
    # build machine's.
    from segcompact.format import _crecords

    assert _crecords.__file__.endswith(".abi3.so")
    builder_type = _crecords.CColumnBuilder
    before = sys.getrefcount(builder_type)
    for _ in range(1000):
        builder = builder_type()
        del builder
    assert sys.getrefcount(builder_type) == before  # instances release their heap type
