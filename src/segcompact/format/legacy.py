"""Magic 0 and 1 message sets (``LegacyRecord.java``), read into the v2 batch model.

Each log entry is one shallow message::

    offset: int64               the wrapper's offset is that of its last inner message (or 0)
    size: int32
    crc: uint32                 CRC-32 of magic..end
    magic: int8                 0 or 1
    attributes: int8            0-2 codec, 3 log-append time (v1)
    timestamp: int64            v1 only
    key: int32 length (-1 null) + bytes
    value: int32 length (-1 null) + bytes

A compressed wrapper's value is a compressed message set of uncompressed inner messages. Inner
offsets are absolute in v0 and relative (0..n-1) in v1. Kafka forbids deeper nesting, and so do
we. Legacy batches are never transactional and have no headers.
"""

from __future__ import annotations

import itertools
import struct
from array import array
from collections.abc import Sequence

from segcompact.errors import CorruptBatchError
from segcompact.format.attributes import Compression, LegacyAttr, TimestampType
from segcompact.format.batch import LOG_OVERHEAD, NO_TIMESTAMP, RecordBatch
from segcompact.format.codecs import codec_for, fix_legacy_lz4_header
from segcompact.format.columns import BinaryColumn, ColumnBuffers, encode_columns
from segcompact.format.crc import crc32
from segcompact.format.record import Record, encode_record

# The fixed fields after LOG_OVERHEAD, by magic; the key's and the value's lengths follow.
_HEADERS = {
    0: struct.Struct(">IbB"),  # crc, magic, attributes
    1: struct.Struct(">IbBq"),  # crc, magic, attributes, timestamp
}
_PREFIX = _HEADERS[0]  # what every magic starts with
_LENGTH = struct.Struct(">i")  # a key's or value's length, -1 for null
_CRC_START = LOG_OVERHEAD.size + struct.calcsize(">I")  # CRC-32 covers magic..end
# The least a message's size field may say: its fixed fields and two lengths.
_MIN_SIZE = {magic: header.size + 2 * _LENGTH.size for magic, header in _HEADERS.items()}


def min_message_size(magic: int) -> int:
    return _MIN_SIZE[magic]


def _bytes_field(entry: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    if pos + _LENGTH.size > len(entry):
        raise CorruptBatchError(f"{what} length runs past the message")
    (n,) = _LENGTH.unpack_from(entry, pos)
    pos += _LENGTH.size
    if n == -1:
        return None, pos
    if n < 0 or pos + n > len(entry):
        raise CorruptBatchError(
            f"{what} of {n} bytes runs past the message ({len(entry) - pos} left)"
        )
    return entry[pos : pos + n], pos + n


class _Message:
    __slots__ = ("attributes", "crc", "crc_valid", "key", "magic", "offset", "timestamp", "value")

    def __init__(self, entry: bytes) -> None:
        self.offset, _size = LOG_OVERHEAD.unpack_from(entry)
        self.crc, self.magic, self.attributes = _PREFIX.unpack_from(entry, LOG_OVERHEAD.size)
        if self.magic not in _MIN_SIZE:
            raise CorruptBatchError(f"unknown magic {self.magic}")
        if len(entry) < LOG_OVERHEAD.size + _MIN_SIZE[self.magic]:
            raise CorruptBatchError(
                f"magic {self.magic} message of {len(entry)} bytes is shorter than its header"
            )
        header = _HEADERS[self.magic]
        fields = header.unpack_from(entry, LOG_OVERHEAD.size)
        self.timestamp = fields[3] if self.magic == 1 else NO_TIMESTAMP
        pos = LOG_OVERHEAD.size + header.size
        self.key, pos = _bytes_field(entry, pos, "key")
        self.value, pos = _bytes_field(entry, pos, "value")
        if pos != len(entry):
            raise CorruptBatchError(f"{len(entry) - pos} bytes follow the message's value")
        self.crc_valid = crc32(memoryview(entry)[_CRC_START:]) == self.crc


_NESTED = int(LegacyAttr.COMPRESSION)  # an int: IntFlag's & costs microseconds a message


class _Inner:
    """A compressed wrapper's inner messages, read one at a time into columns (no object kept
    per message) and encoded as v2 records at once by the C encoder."""

    def __init__(self, wrapper: _Message, max_uncompressed: int) -> None:
        compression = Compression(wrapper.attributes & LegacyAttr.COMPRESSION)
        data = wrapper.value or b""
        if compression is Compression.LZ4 and wrapper.magic == 0:
            data = fix_legacy_lz4_header(data)
        inner = codec_for(compression).decompress(data, max_uncompressed)
        log_append = wrapper.magic == 1 and bool(wrapper.attributes & LegacyAttr.LOG_APPEND_TIME)
        self.offsets = array("q")  # as written: absolute in v0, relative in v1
        timestamps = array("q")
        keys, values = BinaryColumn(), BinaryColumn()
        pos = 0
        while pos < len(inner):
            if pos + LOG_OVERHEAD.size > len(inner):
                raise CorruptBatchError("inner message header runs past the decompressed data")
            _, size = LOG_OVERHEAD.unpack_from(inner, pos)
            end = pos + LOG_OVERHEAD.size + size
            if size < _MIN_SIZE[0] or end > len(inner):
                raise CorruptBatchError(f"inner message of {size} bytes runs past the data")
            m = _Message(inner[pos:end])
            if m.attributes & _NESTED:
                raise CorruptBatchError(
                    "an inner message is itself compressed (nested compression)"
                )
            if m.magic != wrapper.magic:
                raise CorruptBatchError(
                    f"inner message magic {m.magic} differs from its wrapper's {wrapper.magic}"
                )
            if not m.crc_valid:
                raise CorruptBatchError(f"inner message at offset {m.offset} fails its CRC")
            self.offsets.append(m.offset)
            timestamps.append(wrapper.timestamp if log_append else m.timestamp)
            keys.add(m.key)
            values.add(m.value)
            pos = end
        if not self.offsets:
            raise CorruptBatchError("compressed wrapper message holds no inner messages")
        n = len(self.offsets)
        self.first_timestamp, self.max_timestamp = timestamps[0], max(timestamps)
        columns = ColumnBuffers(
            records=n,
            offset=self.offsets.tobytes(),
            timestamp=timestamps.tobytes(),
            attributes=bytes(n),
            batch=b"",
            key_offsets=keys.offsets.tobytes(),
            key_data=memoryview(keys.data),
            key_valid=memoryview(keys.valid),
            value_offsets=values.offsets.tobytes(),
            value_data=memoryview(values.data),
            value_valid=memoryview(values.valid),
            header_offsets=bytes(4 * (n + 1)),
            header_count=0,
            hkey_offsets=bytes(4),
            hkey_data=b"",
            hvalue_offsets=bytes(4),
            hvalue_data=b"",
            hvalue_valid=b"",
        )
        try:  # v2 records, relative to the first offset and timestamp
            self.payload = encode_columns(columns, 0, n, self.offsets[0], self.first_timestamp)
        except ValueError as e:  # a delta no v2 record holds: offsets 2^31 apart
            raise CorruptBatchError(f"inner messages: {e}") from None


def _absolute(wrapper_offset: int, relative: Sequence[int]) -> list[int]:
    """A v1 compressed set's inner offsets made absolute: the wrapper carries the last one.

    Kafka's rule (``AbstractLegacyRecordBatch``): a wrapper offset of 0 (some librdkafka
    producers wrote it so) leaves the inner offsets as written, which the caller does; any other
    wrapper offset below the last inner one is invalid.
    """
    if wrapper_offset < relative[-1]:
        raise CorruptBatchError(
            f"compressed v1 wrapper offset {wrapper_offset} is below its last inner "
            f"offset {relative[-1]} and not 0"
        )
    shift = wrapper_offset - relative[-1]
    absolute = [shift + o for o in relative]
    for o in absolute:
        if not 0 <= o <= wrapper_offset:
            raise CorruptBatchError(
                f"inner offset {o - shift} of a compressed v1 set lies outside 0..{wrapper_offset}"
                " once made absolute"
            )
    return absolute


def parse_legacy(entry: bytes, position: int, max_uncompressed: int) -> RecordBatch:
    """A shallow v0/v1 message (LOG_OVERHEAD included) as a batch of its inner records."""
    try:
        wrapper = _Message(entry)
        compression_id = wrapper.attributes & LegacyAttr.COMPRESSION
        try:
            compression = Compression(compression_id)
        except ValueError:
            raise CorruptBatchError(f"unknown compression codec id {compression_id}") from None
        log_append = wrapper.magic == 1 and bool(wrapper.attributes & LegacyAttr.LOG_APPEND_TIME)
        if wrapper.magic == 0:
            ts_type = TimestampType.NO_TIMESTAMP
        else:
            ts_type = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
        if compression is Compression.NONE:
            record = Record(wrapper.offset, wrapper.timestamp, wrapper.key, wrapper.value)
            first = last = wrapper.offset
            first_ts = max_ts = wrapper.timestamp
            count, payload = 1, encode_record(record, first, first_ts)
        else:
            inner = _Inner(wrapper, max_uncompressed)
            offsets: Sequence[int] = inner.offsets  # v0's are absolute
            if wrapper.magic == 1 and wrapper.offset != 0:
                offsets = _absolute(wrapper.offset, offsets)
            for before, after in itertools.pairwise(offsets):
                if after <= before:
                    raise CorruptBatchError(
                        f"inner offset {after} is not above the one before it ({before})"
                    )
            first, last = offsets[0], offsets[-1]
            first_ts, max_ts = inner.first_timestamp, inner.max_timestamp
            count, payload = len(offsets), inner.payload
    except CorruptBatchError as e:
        raise e.located(position=position, base_offset=LOG_OVERHEAD.unpack_from(entry)[0]) from None
    return RecordBatch(
        position=position,
        base_offset=first,
        last_offset=max(wrapper.offset, last),
        magic=wrapper.magic,
        crc=wrapper.crc,
        crc_valid=wrapper.crc_valid,
        compression=compression,
        timestamp_type=ts_type,
        base_timestamp=first_ts,
        max_timestamp=max_ts,
        records_count=count,
        size=len(entry),
        attributes=wrapper.attributes,
        _legacy=payload,
    )
