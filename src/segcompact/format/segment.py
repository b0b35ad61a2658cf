"""Reading a segment file (``<base offset>.log``) batch by batch, with bounded memory.

Only one batch is held at a time; a batch's claimed size is checked against the bytes left in
the file and against ``max_batch_bytes`` before anything is read or allocated for it. The file
comes as an :class:`~segcompact.format.io.InputFile`: opening it is the caller's business.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from segcompact.errors import CorruptBatchError
from segcompact.format.attributes import BatchAttr
from segcompact.format.batch import (
    DEFAULT_MAX_UNCOMPRESSED,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    V2_HEADER,
    V2_HEADER_SIZE,
    RecordBatch,
    parse_v2,
)
from segcompact.format.io import InputFile, InputStream
from segcompact.format.legacy import min_message_size, parse_legacy
from segcompact.format.logdir import parse_segment_file

DEFAULT_MAX_BATCH_BYTES = 256 << 20
# Bytes read first from every entry: up to and including magic, which says how to read the rest.
_HEAD_SIZE = MAGIC_OFFSET + 1


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Bounds on what one batch may claim or expand to."""

    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_uncompressed_bytes: int = DEFAULT_MAX_UNCOMPRESSED


DEFAULT_LIMITS = ReadLimits()


# A v1 message's first fields after the log overhead: crc, magic, attributes, timestamp.
_V1_HEAD = struct.Struct(">IbBq")
_LOG_APPEND_TIME = int(BatchAttr.LOG_APPEND_TIME)  # bit 3, in v2 batches and v1 messages alike
FIRST_BATCH_HEAD = V2_HEADER_SIZE  # bytes :func:`first_append_ms` wants: any magic's header


def first_append_ms(head: bytes) -> int | None:
    """The append time of a segment's first batch from its first bytes (:data:`FIRST_BATCH_HEAD`
    of them), its checksum unchecked: the base timestamp, or the max timestamp where the broker
    set the time (LogAppendTime). None when the bytes hold none: too few, magic 0, a timestamp
    below 0 (Kafka's "no timestamp"), an unknown magic."""
    if len(head) <= MAGIC_OFFSET:
        return None
    magic = head[MAGIC_OFFSET]
    if magic == 2 and len(head) >= V2_HEADER_SIZE:
        fields = V2_HEADER.unpack_from(head)
        attributes, base_ts, max_ts = fields[5], fields[7], fields[8]
        ts = max_ts if attributes & _LOG_APPEND_TIME else base_ts
    elif magic == 1 and len(head) >= LOG_OVERHEAD.size + _V1_HEAD.size:
        _, _, attributes, ts = _V1_HEAD.unpack_from(head, LOG_OVERHEAD.size)
    else:
        return None
    return ts if ts >= 0 else None


class SegmentReader:
    """Iterates the batches of one ``.log`` file.

    ``verify_crc=True`` raises :class:`CorruptBatchError` at the first batch whose checksum
    fails; ``False`` yields it with ``crc_valid`` false (as ``dump`` wants).

    A batch that starts below the base offset the file's name holds is corrupt (a segment's
    name is the least offset it may hold, as Kafka rolls segments), and so is one that does not
    start past the previous batch's last offset (Kafka refuses such an append: "Out of order
    offsets").

    After iteration, after an error, or when the consumer stopped on a batch it could not use,
    :attr:`valid_bytes` is the position just past the last good batch consumed and
    :attr:`last_offset` that batch's last offset (-1 when there is none). Empty v2 batches count:
    they still span offsets.
    """

    def __init__(
        self,
        file: InputFile,
        *,
        verify_crc: bool = True,
        limits: ReadLimits = DEFAULT_LIMITS,
    ) -> None:
        self.file = file
        self.path = file.location
        self.verify_crc = verify_crc
        self.limits = limits
        self.valid_bytes = 0
        self.last_offset = -1
        named = parse_segment_file(file.location)  # a file named otherwise: not checked
        self.base_offset = None if named is None else named[0]

    def __iter__(self) -> Iterator[RecordBatch]:
        size = len(self.file)
        stream = self.file.open()
        try:
            position = 0
            while position < size:
                try:
                    batch = self._read_one(stream, position, size)
                except CorruptBatchError as e:
                    raise e.located(file=self.path, position=position) from None
                yield batch
                position += batch.size
                self.valid_bytes = position
                self.last_offset = batch.last_offset
        finally:
            stream.close()

    def _read_one(self, f: InputStream, position: int, file_size: int) -> RecordBatch:
        left = file_size - position
        if left < _HEAD_SIZE:
            raise CorruptBatchError(f"{left} trailing bytes are too few for a batch header")
        head = f.read(_HEAD_SIZE)
        if len(head) < _HEAD_SIZE:
            raise CorruptBatchError("the file was truncated while being read")
        base_offset, length = LOG_OVERHEAD.unpack_from(head)
        magic = head[MAGIC_OFFSET]
        total = LOG_OVERHEAD.size + length
        where = {"base_offset": base_offset}
        if magic == 2:
            minimum = V2_HEADER_SIZE - LOG_OVERHEAD.size
        elif magic in (0, 1):
            minimum = min_message_size(magic)
        else:
            raise CorruptBatchError(f"unknown magic {magic} (expected 0, 1 or 2)", **where)
        if length < minimum:
            raise CorruptBatchError(
                f"batch length {length} is less than the {minimum} bytes magic {magic} needs",
                **where,
            )
        if total > left:
            raise CorruptBatchError(
                f"batch length {length} runs past the end of the file ({left} bytes left)",
                **where,
            )
        if total > self.limits.max_batch_bytes:
            raise CorruptBatchError(
                f"batch length {length} exceeds the {self.limits.max_batch_bytes}-byte limit",
                **where,
            )
        entry = head + f.read(total - len(head))
        if len(entry) != total:  # the file shrank while being read
            raise CorruptBatchError(
                f"batch of {total} bytes ends after {len(entry)} (the file was truncated)",
                **where,
            )
        if magic == 2:
            batch = parse_v2(entry, position)
        else:
            batch = parse_legacy(entry, position, self.limits.max_uncompressed_bytes)
        if self.base_offset is not None and batch.base_offset < self.base_offset:
            raise CorruptBatchError(
                f"offset {batch.base_offset} is below the segment's base offset {self.base_offset}",
                base_offset=batch.base_offset,
            )
        if batch.base_offset <= self.last_offset:
            raise CorruptBatchError(
                f"offset {batch.base_offset} is not past the previous batch's last offset "
                f"{self.last_offset}",
                base_offset=batch.base_offset,
            )
        if self.verify_crc and not batch.crc_valid:
            raise CorruptBatchError(
                f"CRC mismatch: stored {batch.crc:#010x}", base_offset=batch.base_offset
            )
        return batch
