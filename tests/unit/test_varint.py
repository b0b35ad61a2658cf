from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record import util as kafka_util

from segcompact.errors import CorruptBatchError
from segcompact.format.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    zigzag,
)

longs = st.integers(-(2**63), 2**63 - 1)
ints = st.integers(-(2**31), 2**31 - 1)


@given(longs)
def test_varlong_round_trips(value: int) -> None:
    data = encode_varlong(value)
    assert decode_varlong(data + b"\xff", 0) == (value, len(data))
    assert len(data) == max(1, -(-zigzag(value).bit_length() // 7))  # 7 bits a byte


@given(ints)
def test_varint_matches_kafka_python(value: int) -> None:
    out = bytearray()
    kafka_util.encode_varint(value, out.append)
    assert encode_varint(value) == bytes(out)
    assert kafka_util.size_of_varint(value) == len(out)
    assert decode_varint(bytes(out), 0) == kafka_util.decode_varint(bytes(out), 0)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_known_vectors(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))


def test_varint_out_of_range_and_too_long() -> None:
    with pytest.raises(ValueError, match="out of range"):
        encode_varint(2**31)
    with pytest.raises(CorruptBatchError, match="longer than 5 bytes"):
        decode_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(CorruptBatchError, match="does not fit in 32 bits"):
        decode_varint(encode_varlong(2**32)[:5], 0)
    with pytest.raises(CorruptBatchError, match="past the end"):
        decode_varlong(b"\x80", 0)
