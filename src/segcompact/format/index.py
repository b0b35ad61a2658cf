"""Kafka's sparse segment indexes: ``.index`` (offset → position) and ``.timeindex``.

``.index`` entries: relativeOffset int32, position int32 (8 bytes).
``.timeindex`` entries: timestamp int64, relativeOffset int32 (12 bytes).
Offsets are relative to the segment's base offset. Files hold exactly their entries, as Kafka
trims a segment's indexes when it stops being the active one.

Entries follow Kafka's rule (``LogSegment.recover``): before a batch, if more than
``index.interval.bytes`` of log were written since the last entry, index the batch's last
offset at the batch's position, and offer the time index the max timestamp so far. A closed
segment offers its max timestamp once more; the time index only takes a timestamp larger than
its last one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


@dataclass(slots=True)
class IndexBuilder:
    """Accumulates both indexes for one segment as batches are appended in order."""

    base_offset: int
    index_interval_bytes: int = 4096
    offset_entries: list[tuple[int, int]] = field(default_factory=list)
    time_entries: list[tuple[int, int]] = field(default_factory=list)
    _position: int = 0
    _last_entry_position: int = 0
    _max_timestamp: int = NO_TIMESTAMP
    _offset_of_max_timestamp: int = -1

    def add(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """Account for one batch of ``size`` bytes written at the current end of the log."""
        if last_offset - self.base_offset > 0x7FFFFFFF or last_offset < self.base_offset:
            raise ValueError(
                f"offset {last_offset} does not fit a segment based at {self.base_offset}"
            )
        if max_timestamp > self._max_timestamp:
            self._max_timestamp = max_timestamp
            self._offset_of_max_timestamp = last_offset
        if self._position - self._last_entry_position > self.index_interval_bytes:
            self.offset_entries.append((last_offset, self._position))
            self._offer_time()
            self._last_entry_position = self._position
        self._position += size

    def _offer_time(self) -> None:
        last = self.time_entries[-1][0] if self.time_entries else NO_TIMESTAMP
        if self._max_timestamp > last:
            self.time_entries.append((self._max_timestamp, self._offset_of_max_timestamp))

    def offset_index(self) -> bytes:
        return b"".join(OFFSET_ENTRY.pack(o - self.base_offset, p) for o, p in self.offset_entries)

    def time_index(self) -> bytes:
        """The time index of the closed segment (its max timestamp offered last)."""
        self._offer_time()
        return b"".join(TIME_ENTRY.pack(t, o - self.base_offset) for t, o in self.time_entries)


def read_offset_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """``(offset, position)`` entries; a preallocated tail of zero entries is ignored."""
    entries = []
    for rel, pos in OFFSET_ENTRY.iter_unpack(data[: len(data) // 8 * 8]):
        if pos == 0:  # no real entry sits at position 0: the preallocated zeros begin
            break
        entries.append((base_offset + rel, pos))
    return entries


def read_time_index(data: bytes, base_offset: int) -> list[tuple[int, int]]:
    """``(timestamp, offset)`` entries; a preallocated tail of zero entries is ignored."""
    entries = []
    for ts, rel in TIME_ENTRY.iter_unpack(data[: len(data) // 12 * 12]):
        if ts == 0 and rel == 0:
            break
        entries.append((ts, base_offset + rel))
    return entries
