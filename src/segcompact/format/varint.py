"""Kafka's zigzag varints (protobuf encoding), as in ``org.apache.kafka.common.utils.ByteUtils``.

A varint holds a 32-bit int in at most 5 bytes, a varlong a 64-bit long in at most 10. Decoders
thread ``(buffer, pos)`` and return ``(value, pos)``.
"""

from __future__ import annotations

from segcompact.errors import CorruptBatchError

INT_MAX_BYTES = 5
LONG_MAX_BYTES = 10
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def zigzag(value: int) -> int:
    """Map a signed 64-bit value onto an unsigned one: 0, -1, 1, -2 → 0, 1, 2, 3."""
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def encode_varlong(value: int) -> bytes:
    """The zigzag varint bytes of a signed 64-bit value."""
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"varlong out of range: {value}")
    v = zigzag(value)
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """The zigzag varint bytes of a signed 32-bit value."""
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(f"varint out of range: {value}")
    return encode_varlong(value)


def decode_varlong(
    buf: bytes | bytearray | memoryview, pos: int, max_bytes: int = LONG_MAX_BYTES
) -> tuple[int, int]:
    """Read one zigzag varint at ``pos``; return ``(value, next position)``."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptBatchError(f"varint runs past the end of the data at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return unzigzag(result), pos
        shift += 7
    raise CorruptBatchError(f"varint longer than {max_bytes} bytes at byte {pos - max_bytes}")


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Read one zigzag varint holding a 32-bit value."""
    value, pos = decode_varlong(buf, pos, INT_MAX_BYTES)
    if not _INT_MIN <= value <= _INT_MAX:
        raise CorruptBatchError(f"varint value {value} does not fit in 32 bits")
    return value, pos
