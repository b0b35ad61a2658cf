"""The per-record rules of compaction: which record wins, and which record is a delete.

Both the reference model and the Spark job use these definitions; the Spark job restates them
as column expressions (``segcompact.spark.rules``) and the tests hold the two to each other.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass

Header = tuple[str, bytes | None]
_LONG = struct.Struct(">q")
TOMBSTONE_TRUE = (b"true", b"1", b"\x01")


class Strategy(enum.StrEnum):
    """``compaction.strategy`` (KIP-280)."""

    OFFSET = "offset"
    TIMESTAMP = "timestamp"
    HEADER = "header"

    @classmethod
    def from_str(cls, value: str) -> Strategy:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"unknown compaction.strategy {value!r}; allowed: {', '.join(cls)}"
            ) from None


class TombstoneMode(enum.StrEnum):
    """``compaction.tombstone.mode`` (KIP-87)."""

    NULL_VALUE = "null-value"
    HEADER = "header"
    ATTRIBUTE = "attribute"

    @classmethod
    def from_str(cls, value: str) -> TombstoneMode:
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"unknown compaction.tombstone.mode {value!r}; allowed: {', '.join(cls)}"
            ) from None


@dataclass(frozen=True, slots=True)
class TopicRules:
    """What the merge needs of a topic's configuration."""

    strategy: Strategy = Strategy.OFFSET
    strategy_header: str | None = None
    tombstone_mode: TombstoneMode = TombstoneMode.NULL_VALUE
    tombstone_header: str = "tombstone"
    delete_retention_ms: int = 86_400_000


def last_header(headers: Sequence[Header], name: str) -> tuple[bool, bytes | None]:
    """``(present, value)`` of the last occurrence of header ``name``."""
    for key, value in reversed(headers):
        if key == name:
            return True, value
    return False, None


def header_version(headers: Sequence[Header], name: str | None) -> int | None:
    """The version under the header strategy: an 8-byte big-endian signed long, else None.

    A present header whose value is not 8 bytes counts as absent (the caller counts it).
    """
    if name is None:
        return None
    present, value = last_header(headers, name)
    if not present or value is None or len(value) != _LONG.size:
        return None
    return int(_LONG.unpack(value)[0])


def order_key(
    strategy: Strategy, offset: int, timestamp_ms: int, version: int | None
) -> tuple[int, int, int]:
    """A key whose maximum is the record that wins under ``strategy``.

    offset: the highest offset. timestamp: the highest timestamp, then offset. header: a record
    with a version beats one without; two with: the higher version, then offset; neither: offset.
    """
    if strategy is Strategy.TIMESTAMP:
        return (0, timestamp_ms, offset)
    if strategy is Strategy.HEADER:
        return (0, 0, offset) if version is None else (1, version, offset)
    return (0, 0, offset)


def is_tombstone(
    rules: TopicRules, value: bytes | None, headers: Sequence[Header], attributes: int
) -> bool:
    """Whether a record deletes its key under the topic's tombstone mode."""
    if rules.tombstone_mode is TombstoneMode.HEADER:
        present, flag = last_header(headers, rules.tombstone_header)
        return present and flag in TOMBSTONE_TRUE
    if rules.tombstone_mode is TombstoneMode.ATTRIBUTE:
        return bool(attributes & 0x01)
    return value is None
