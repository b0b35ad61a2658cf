"""The two checksums of Kafka's log format: CRC-32C (v2 batches) and CRC-32 (v0/v1 messages)."""

from __future__ import annotations

import zlib

import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli), hardware-accelerated where the CPU has it; ``value`` continues one."""
    return int(_crc32c.crc32c(data, value))


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE), as magic 0 and 1 messages use."""
    return zlib.crc32(data) & 0xFFFFFFFF
