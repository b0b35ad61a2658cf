"""Control records: the transaction markers of Kafka's control batches.

A control batch (attribute bit 5) holds one record whose key and value are fixed structs
(``ControlRecordType.java``, ``EndTransactionMarker.java``), big-endian::

    key:   version: int16 (0), type: int16 (0 ABORT, 1 COMMIT)
    value: version: int16 (0), coordinatorEpoch: int32
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Sequence

from segcompact.errors import CorruptBatchError
from segcompact.format.record import Record

KEY = struct.Struct(">hh")  # version, type
VALUE = struct.Struct(">hi")  # version, coordinator epoch
CURRENT_VERSION = 0


class ControlType(enum.IntEnum):
    """The type in a control record's key."""

    ABORT = 0
    COMMIT = 1


COMMIT_KEY = KEY.pack(CURRENT_VERSION, ControlType.COMMIT)
ABORT_KEY = KEY.pack(CURRENT_VERSION, ControlType.ABORT)


def control_type(key: bytes | None) -> ControlType | int | None:
    """The type a control record's key names (an int for a type Kafka does not know); None
    when the key is too short to hold one."""
    if key is None or len(key) < KEY.size:
        return None
    _, kind = KEY.unpack_from(key)
    try:
        return ControlType(kind)
    except ValueError:
        return int(kind)


def marker(offset: int, commit: bool, timestamp: int, coordinator_epoch: int = 0) -> Record:
    """An end-transaction marker record, for a control batch of its own."""
    return Record(
        offset,
        timestamp,
        COMMIT_KEY if commit else ABORT_KEY,
        VALUE.pack(CURRENT_VERSION, coordinator_epoch),
    )


def check_control_records(count: int, records: Callable[[], Sequence[Record]]) -> None:
    """:class:`CorruptBatchError` unless a control batch of ``count`` records (its header's)
    holds what one does: one end transaction marker (none once Kafka's cleaner removed it).
    Anything else would be read as an abort by a reader that takes every marker but a commit
    for one. ``records`` decodes them, called only for a count of one or none: a control batch
    claiming millions is refused before any is decoded."""
    if count > 1:
        raise CorruptBatchError(f"control batch holds {count} records (one marker at most)")
    for r in records():
        if r.key not in (ABORT_KEY, COMMIT_KEY):
            key = "null" if r.key is None else r.key.hex() or "empty"
            raise CorruptBatchError(
                f"control record key {key} is not a version {CURRENT_VERSION} abort or commit "
                "marker"
            )
