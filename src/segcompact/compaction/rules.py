"""The per-record rules of compaction: which record wins, and which record is a delete.

Rules come from a topic's :class:`~segcompact.config.TopicConfig`. Both the reference model
(``tests/support/model.py``) and the Spark job use these definitions; the Spark job restates
them as column expressions (``segcompact.spark.rules``), and ``tests/spark/test_rules_twins.py``
holds each to its twin.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig
from segcompact.format.attributes import RecordAttr
from segcompact.format.record import Header

_LONG = struct.Struct(">q")
TOMBSTONE_TRUE = (b"true", b"1", b"\x01")


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
    strategy: CompactionStrategy, offset: int, timestamp_ms: int, version: int | None
) -> tuple[int, int, int]:
    """A key whose maximum is the record that wins under ``strategy``.

    offset: the highest offset. timestamp: the highest timestamp, then offset. header: a record
    with a version beats one without; two with: the higher version, then offset; neither: offset.
    """
    if strategy is CompactionStrategy.TIMESTAMP:
        return (0, timestamp_ms, offset)
    if strategy is CompactionStrategy.HEADER:
        return (0, 0, offset) if version is None else (1, version, offset)
    return (0, 0, offset)


def is_tombstone(
    rules: TopicConfig, value: bytes | None, headers: Sequence[Header], attributes: int
) -> bool:
    """Whether a record deletes its key under the topic's tombstone mode."""
    if rules.tombstone_mode is TombstoneMode.HEADER:
        present, flag = last_header(headers, rules.tombstone_header)
        return present and flag in TOMBSTONE_TRUE
    if rules.tombstone_mode is TombstoneMode.ATTRIBUTE:
        return bool(attributes & RecordAttr.TOMBSTONE)
    return value is None


def is_young(timestamp_ms: int, now_ms: int, min_compaction_lag_ms: int) -> bool:
    """Whether a record is too young to be compacted (``min.compaction.lag.ms``).

    Kafka's cleaner stops at the first segment whose largest timestamp is within the lag of
    now (``LogCleanerManager.cleanableOffsets``); a lag of 0 makes nothing young.
    """
    return min_compaction_lag_ms > 0 and timestamp_ms > now_ms - min_compaction_lag_ms


def first_uncleanable_offset(
    records: Iterable[tuple[int, int, int]], now_ms: int, min_compaction_lag_ms: int
) -> int | None:
    """The offset from which a partition's log stays raw, or None when all of it may be cleaned.

    ``records`` are ``(offset, timestamp, segment base offset)``: as in Kafka, a young record
    keeps its whole segment, and every later one, out of the cleaning.
    """
    bases = [base for _, ts, base in records if is_young(ts, now_ms, min_compaction_lag_ms)]
    return min(bases) if bases else None
