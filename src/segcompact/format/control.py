"""Control records: the transaction markers of Kafka's control batches.

A control batch (attribute bit 5) holds one record whose key and value are fixed structs
(``ControlRecordType.java``, ``EndTransactionMarker.java``), big-endian::

    key:   version: int16 (0), type: int16 (0 ABORT, 1 COMMIT)
    value: version: int16 (0), coordinatorEpoch: int32
"""

from __future__ import annotations

import enum
import struct

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
