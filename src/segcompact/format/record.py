"""One Kafka record as segcompact sees it, and the v2 record wire format.

Record (``DefaultRecord.java``), inside a batch after decompression::

    length: varint              bytes that follow
    attributes: int8            unused by Kafka; KIP-87 puts its tombstone flag in bit 0
    timestampDelta: varlong     from the batch's base timestamp
    offsetDelta: varint         from the batch's base offset
    keyLength: varint           -1 for a null key
    key: byte[]
    valueLength: varint         -1 for a null value
    value: byte[]
    headersCount: varint
    Header: headerKeyLength varint, headerKey utf-8, headerValueLength varint (-1 null), value
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from segcompact.errors import CorruptBatchError
from segcompact.format.varint import decode_varint, decode_varlong, encode_varint, encode_varlong

Header = tuple[str, bytes | None]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _wrap64(value: int) -> int:
    """Two's-complement wrap to 64 bits, as Java (and C) hold a varlong's value."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


# length, attributes, timestamp delta, offset delta, key length, value length, header count.
MIN_RECORD_SIZE = 7


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


def _sized(value: bytes | None) -> bytes:
    if value is None:
        return encode_varint(-1)
    return encode_varint(len(value)) + value


def encode_record(record: Record, base_offset: int, base_timestamp: int) -> bytes:
    """The length-prefixed v2 bytes of one record."""
    body = bytearray()
    body.append(record.attributes & 0xFF)
    body += encode_varlong(record.timestamp - base_timestamp)
    body += encode_varint(record.offset - base_offset)
    body += _sized(record.key)
    body += _sized(record.value)
    body += encode_varint(len(record.headers))
    for hkey, hvalue in record.headers:
        body += _sized(hkey.encode("utf-8"))
        body += _sized(hvalue)
    return encode_varint(len(body)) + bytes(body)


def encode_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytes:
    return b"".join(encode_record(r, base_offset, base_timestamp) for r in records)


def _read_sized(buf: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    n, pos = decode_varint(buf, pos)
    if n == -1:
        return None, pos
    if n < -1:
        raise CorruptBatchError(f"{what} length {n} is negative")
    if pos + n > end:
        raise CorruptBatchError(f"{what} of {n} bytes runs past its record ({end - pos} left)")
    return buf[pos : pos + n], pos + n


def _check_offset_delta(i: int, delta: int, previous: int, last: int) -> None:
    if delta < 0:
        raise CorruptBatchError(f"record {i}: offset delta {delta} is negative")
    if delta <= previous:
        raise CorruptBatchError(
            f"record {i}: offset delta {delta} is not above the previous record's {previous}"
        )
    if delta > last:
        raise CorruptBatchError(
            f"record {i}: offset delta {delta} is past the batch's last offset delta {last}"
        )


def iter_records(
    payload: bytes, count: int, base_offset: int, base_timestamp: int, last_offset_delta: int
) -> Iterator[Record]:
    """Decode ``count`` records from a batch's (decompressed) records section.

    The pure-Python reference decoder; ``_crecords`` is its compiled twin for Arrow output.
    Every length is checked against the bytes that remain before anything is sliced. Offset
    deltas must rise strictly within ``0..last_offset_delta`` (the batch header's), as every
    writer of Kafka's lays them out: a record outside its batch's range would land past the
    log's end or collide with another batch's offsets.
    """
    end_all = len(payload)
    if count < 0 or count * MIN_RECORD_SIZE > end_all:
        raise CorruptBatchError(
            f"records count {count} is larger than {end_all} bytes of records can hold"
        )
    pos = 0
    previous = -1  # the offset delta before
    # Values past 64 bits are reported only if the batch is otherwise well-formed, as the C
    # twin does: corruption first.
    overflow: CorruptBatchError | None = None
    for i in range(count):
        length, pos = decode_varint(payload, pos)
        end = pos + length
        if length < MIN_RECORD_SIZE - 1 or end > end_all:
            raise CorruptBatchError(
                f"record {i} claims {length} bytes; {end_all - pos} remain in the batch"
            )
        attributes = payload[pos]
        ts_delta, p = decode_varlong(payload, pos + 1)
        if overflow is None and not _INT64_MIN <= ts_delta <= _INT64_MAX:
            overflow = CorruptBatchError(f"varlong at byte {pos + 1} does not fit in 64 bits")
        ts_delta = _wrap64(ts_delta)
        off_delta, p = decode_varint(payload, p)
        key, p = _read_sized(payload, p, end, "key")
        value, p = _read_sized(payload, p, end, "value")
        n_headers, p = decode_varint(payload, p)
        if n_headers < 0 or n_headers > (end - p) // 2:
            raise CorruptBatchError(f"record {i} claims {n_headers} headers in {end - p} bytes")
        headers: list[Header] = []
        for _ in range(n_headers):
            hkey, p = _read_sized(payload, p, end, "header key")
            if hkey is None:
                raise CorruptBatchError("header key is null")
            hvalue, p = _read_sized(payload, p, end, "header value")
            headers.append((hkey.decode("utf-8", "replace"), hvalue))
        if p != end:
            raise CorruptBatchError(f"record {i} has {end - p} bytes past its last field")
        _check_offset_delta(i, off_delta, previous, last_offset_delta)
        previous = off_delta
        pos = end
        offset, timestamp = base_offset + off_delta, base_timestamp + ts_delta
        if overflow is None and not _INT64_MIN <= offset <= _INT64_MAX:
            overflow = CorruptBatchError(
                f"record {i}: base offset {base_offset} + delta {off_delta} overflows 64 bits"
            )
        if overflow is None and not _INT64_MIN <= timestamp <= _INT64_MAX:
            overflow = CorruptBatchError(
                f"record {i}: base timestamp {base_timestamp} + delta {ts_delta} overflows 64 bits"
            )
        yield Record(offset, timestamp, key, value, tuple(headers), attributes)
    if pos != end_all:
        raise CorruptBatchError(
            f"{end_all - pos} bytes remain after the {count} records the batch declares"
        )
    if overflow is not None:
        raise overflow
