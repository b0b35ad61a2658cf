"""Record batches: the v2 wire layout, one decoded model for every magic, and the v2 writer.

RecordBatch v2 (``DefaultRecordBatch.java``), big-endian::

    baseOffset: int64
    length: int32                   bytes after this field
    partitionLeaderEpoch: int32
    magic: int8                     2
    crc: uint32                     CRC-32C of attributes..end
    attributes: int16               0-2 codec, 3 log-append time, 4 transactional, 5 control,
                                    6 delete horizon (KIP-534: base timestamp is the horizon)
    lastOffsetDelta: int32
    baseTimestamp: int64
    maxTimestamp: int64
    producerId: int64
    producerEpoch: int16
    baseSequence: int32
    recordsCount: int32
    records: [Record]               compressed as one block when the codec is not none

Magic 0 and 1 message sets are read by ``legacy`` into the same :class:`RecordBatch` model.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from segcompact.errors import CorruptBatchError
from segcompact.format.attributes import BatchAttr, Compression, TimestampType
from segcompact.format.codecs import codec_for
from segcompact.format.crc import crc32c
from segcompact.format.record import Record, encode_records, iter_records

_INT64_MAX = (1 << 63) - 1

# The v2 header's fields in order, each with its struct code. Every field offset below is
# derived from this list.
_V2_FIELDS = (
    ("baseOffset", "q"),
    ("length", "i"),
    ("partitionLeaderEpoch", "i"),
    ("magic", "b"),
    ("crc", "I"),
    ("attributes", "h"),
    ("lastOffsetDelta", "i"),
    ("baseTimestamp", "q"),
    ("maxTimestamp", "q"),
    ("producerId", "q"),
    ("producerEpoch", "h"),
    ("baseSequence", "i"),
    ("recordsCount", "i"),
)
V2_HEADER = struct.Struct(">" + "".join(code for _, code in _V2_FIELDS))
V2_HEADER_SIZE = V2_HEADER.size  # 61


def _v2_offset(name: str) -> int:
    """Where field ``name`` starts in a v2 batch."""
    before = _V2_FIELDS[: [n for n, _ in _V2_FIELDS].index(name)]
    return struct.calcsize(">" + "".join(code for _, code in before))


# The offset and size that lead every entry of a log file, whatever its magic.
LOG_OVERHEAD = struct.Struct(">" + "".join(code for _, code in _V2_FIELDS[:2]))
LENGTH_OFFSET = _v2_offset("length")
# Magic sits at the same byte in every format: after partitionLeaderEpoch (v2) or crc (v0/v1).
MAGIC_OFFSET = _v2_offset("magic")
CRC_OFFSET = _v2_offset("crc")
ATTRIBUTES_OFFSET = _v2_offset("attributes")  # CRC-32C covers from here to the end
LAST_OFFSET_DELTA_OFFSET = _v2_offset("lastOffsetDelta")
RECORDS_COUNT_OFFSET = _v2_offset("recordsCount")
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

DEFAULT_MAX_UNCOMPRESSED = 256 << 20

_COMPRESSION_MASK = int(BatchAttr.COMPRESSION)
_LOG_APPEND_TIME = int(BatchAttr.LOG_APPEND_TIME)
_TRANSACTIONAL = int(BatchAttr.TRANSACTIONAL)
_CONTROL = int(BatchAttr.CONTROL)
_DELETE_HORIZON = int(BatchAttr.DELETE_HORIZON)
_COMPRESSIONS = tuple(Compression)
_TIMESTAMP_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)


@dataclass(slots=True)
class RecordBatch:
    """A batch as read from a log, of any magic; the records are decoded on demand."""

    position: int
    base_offset: int
    last_offset: int
    magic: int
    crc: int
    crc_valid: bool
    compression: Compression
    timestamp_type: TimestampType
    base_timestamp: int
    max_timestamp: int
    records_count: int
    size: int  # bytes in the log, LOG_OVERHEAD included
    is_transactional: bool = False
    is_control: bool = False
    delete_horizon_ms: int | None = None
    partition_leader_epoch: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    attributes: int = 0
    # v2: the records section as stored (maybe compressed); legacy: its records, decompressed
    # and encoded as a v2 records section.
    _body: bytes = b""
    _legacy: bytes | None = field(default=None, repr=False)

    def payload(self, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> bytes:
        """The v2 records section, decompressed (never more than ``max_uncompressed`` bytes)."""
        if self._legacy is not None:
            return self._legacy
        if self.compression is Compression.NONE or not self._body:
            return self._body
        return codec_for(self.compression).decompress(self._body, max_uncompressed)

    def records(self, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> list[Record]:
        """The batch's records with absolute offsets and timestamps, in log order.

        LogAppendTime batches report the batch's max timestamp for every record, as Kafka does.
        """
        return list(self.iter_records(max_uncompressed))

    def iter_records(self, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED) -> Iterator[Record]:
        """:meth:`records` one at a time: a batch of millions holds one record object at once.
        Corruption raises when reached, after the records before it."""
        payload = self.payload(max_uncompressed)
        log_append = self.timestamp_type is TimestampType.LOG_APPEND_TIME
        try:
            for r in iter_records(
                payload,
                self.records_count,
                self.base_offset,
                self.base_timestamp,
                self.last_offset - self.base_offset,
            ):
                if log_append:
                    r = Record(
                        r.offset, self.max_timestamp, r.key, r.value, r.headers, r.attributes
                    )
                yield r
        except CorruptBatchError as e:
            raise e.located(position=self.position, base_offset=self.base_offset) from None


def parse_v2(entry: bytes, position: int) -> RecordBatch:
    """A v2 batch from its full entry bytes (LOG_OVERHEAD included); checks layout, not CRC."""
    if len(entry) < V2_HEADER_SIZE:
        raise CorruptBatchError(
            f"v2 batch of {len(entry)} bytes is shorter than its {V2_HEADER_SIZE}-byte header",
            position=position,
        )
    (
        base_offset,
        _length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = V2_HEADER.unpack_from(entry)
    # Plain int masks: IntFlag operations cost a microsecond each on this per-batch path.
    codec_id = attributes & _COMPRESSION_MASK
    if codec_id >= len(_COMPRESSIONS):
        raise CorruptBatchError(
            f"unknown compression codec id {codec_id}", position=position, base_offset=base_offset
        )
    if count < 0 or last_delta < 0:
        raise CorruptBatchError(
            f"negative records count {count} or last offset delta {last_delta}",
            position=position,
            base_offset=base_offset,
        )
    if base_offset > _INT64_MAX - last_delta:
        raise CorruptBatchError(
            f"base offset {base_offset} + last offset delta {last_delta} overflows 64 bits",
            position=position,
            base_offset=base_offset,
        )
    return RecordBatch(
        position=position,
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        magic=magic,
        crc=crc,
        crc_valid=crc32c(memoryview(entry)[ATTRIBUTES_OFFSET:]) == crc,
        compression=_COMPRESSIONS[codec_id],
        timestamp_type=_TIMESTAMP_TYPES[bool(attributes & _LOG_APPEND_TIME)],
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        records_count=count,
        size=len(entry),
        is_transactional=bool(attributes & _TRANSACTIONAL),
        is_control=bool(attributes & _CONTROL),
        delete_horizon_ms=base_ts if attributes & _DELETE_HORIZON else None,
        partition_leader_epoch=leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        attributes=attributes,
        _body=entry[V2_HEADER_SIZE:],
    )


def build_batch(
    records: Sequence[Record],
    *,
    compression: Compression = Compression.NONE,
    base_offset: int | None = None,
    last_offset: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    max_timestamp: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """One v2 batch holding ``records`` at their own offsets (gaps allowed, as after cleaning).

    ``last_offset`` may exceed the last record's offset, and an empty batch keeps an offset
    range, as Kafka's cleaner does to keep a log's end offset. With ``delete_horizon_ms`` set,
    bit 6 is on and the base timestamp is the horizon; record timestamps are unchanged.
    """
    if not records and (base_offset is None or last_offset is None):
        raise ValueError("an empty batch needs base_offset and last_offset")
    if base_offset is None:
        base_offset = records[0].offset
    if last_offset is None:
        last_offset = records[-1].offset
    if any(not base_offset <= r.offset <= last_offset for r in records):
        raise ValueError(f"record offsets must lie in [{base_offset}, {last_offset}]")
    if last_offset - base_offset > 0x7FFFFFFF:
        raise ValueError("a batch spans at most 2^31 - 1 offsets")
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    else:
        base_ts = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= BatchAttr.LOG_APPEND_TIME
    if is_transactional:
        attributes |= BatchAttr.TRANSACTIONAL
    if is_control:
        attributes |= BatchAttr.CONTROL
    if delete_horizon_ms is not None:
        attributes |= BatchAttr.DELETE_HORIZON
    return assemble_batch(
        encode_records(records, base_offset, base_ts),
        len(records),
        base_offset=base_offset,
        last_offset=last_offset,
        base_timestamp=base_ts,
        max_timestamp=max_timestamp,
        attributes=attributes,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def assemble_batch(
    body: bytes,
    count: int,
    *,
    base_offset: int,
    last_offset: int,
    base_timestamp: int,
    max_timestamp: int,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A v2 batch around ``count`` encoded records ``body`` (relative to ``base_offset`` and
    ``base_timestamp``), compressed under the codec of ``attributes``, with its CRC."""
    compression = Compression(attributes & 0x07)
    if compression is not Compression.NONE and count:
        body = codec_for(compression).compress(body)
    header = bytearray(
        V2_HEADER.pack(
            base_offset,
            V2_HEADER_SIZE - LOG_OVERHEAD.size + len(body),
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset - base_offset,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    crc = crc32c(body, crc32c(memoryview(header)[ATTRIBUTES_OFFSET:]))
    struct.pack_into(">I", header, CRC_OFFSET, crc)
    return bytes(header) + body
