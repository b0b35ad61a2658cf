"""Decoding a segment to Arrow record batches: the columns of Spark's Kafka source and more.

Per record: ``key, value, topic, partition, offset, timestamp, timestampType, headers`` as
Spark's Kafka source names and types them, plus ``attributes`` (the record's attributes byte,
KIP-87's tombstone bit) and the fields of the batch it came from, which compaction needs:
producer id and epoch, base sequence, transactional, control, delete horizon, the batch's
offsets, magic and codec. Records of control batches are included (``is_control``).

Memory is bounded by records and by bytes: batches are read one at a time and a chunk is
emitted every ``chunk_records`` records or ``chunk_bytes`` bytes of keys, values and headers. A
batch too large for the chunk (millions of tiny records in one compressed batch, or in a v1
wrapper) is checked whole first, storing nothing, then decoded a slice at a time: its records
span chunks, and a corrupt one still yields none of them. What a batch holds at most is its
decompressed payload (``ReadLimits.max_uncompressed_bytes``).

A reduction reads a segment twice (``compaction/reduce.py``): first with ``values=False`` (and
``headers=False`` when its rules read none), which builds each value's validity alone; then with
a :class:`Selection`, which builds the records it flags only and skips the batches it flags
none of (their CRC checked, their records not decompressed).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from segcompact.errors import CorruptBatchError
from segcompact.format.attributes import TimestampType
from segcompact.format.batch import RecordBatch
from segcompact.format.columns import MAX_TIMESTAMP_MS, Buffer, ColumnBuffers, column_builder
from segcompact.format.control import check_control_records
from segcompact.format.segment import SegmentReader

TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])

SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", TIMESTAMP, nullable=False),
        pa.field("timestampType", pa.int32(), nullable=False),
        pa.field("headers", pa.list_(HEADER), nullable=False),
        pa.field("attributes", pa.int8(), nullable=False),
        pa.field("producer_id", pa.int64(), nullable=False),
        pa.field("producer_epoch", pa.int16(), nullable=False),
        pa.field("base_sequence", pa.int32(), nullable=False),
        pa.field("is_transactional", pa.bool_(), nullable=False),
        pa.field("is_control", pa.bool_(), nullable=False),
        pa.field("delete_horizon", TIMESTAMP),
        pa.field("batch_base_offset", pa.int64(), nullable=False),
        pa.field("batch_last_offset", pa.int64(), nullable=False),
        pa.field("magic", pa.int8(), nullable=False),
        pa.field("compression", pa.int8(), nullable=False),
    ]
)

_BATCH_FIELDS = (
    ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()),
    ("base_sequence", pa.int32()),
    ("is_transactional", pa.bool_()),
    ("is_control", pa.bool_()),
    ("batch_base_offset", pa.int64()),
    ("batch_last_offset", pa.int64()),
    ("magic", pa.int8()),
    ("compression", pa.int8()),
)


@dataclass(slots=True)
class _BatchMeta:
    """Per-batch values of the current chunk, expanded to rows with ``take``."""

    columns: dict[str, list[int | bool]] = field(
        default_factory=lambda: {name: [] for name, _ in _BATCH_FIELDS}
    )
    timestamp_type: list[int] = field(default_factory=list)
    max_timestamp: list[int] = field(default_factory=list)
    delete_horizon: list[int | None] = field(default_factory=list)

    def add(self, b: RecordBatch) -> int:
        """The batch's index in the chunk; :class:`CorruptBatchError` for a batch-level time
        (its delete horizon, or the LogAppendTime every record takes) no column can hold."""
        times = {"delete horizon": b.delete_horizon_ms}
        if b.timestamp_type is TimestampType.LOG_APPEND_TIME:
            times["log append time"] = b.max_timestamp
        for what, ms in times.items():
            if ms is not None and not -MAX_TIMESTAMP_MS <= ms <= MAX_TIMESTAMP_MS:
                raise CorruptBatchError(
                    f"{what} {ms} ms is out of range (a timestamp in microseconds holds "
                    f"+-{MAX_TIMESTAMP_MS} ms)"
                )
        values = (
            b.producer_id,
            b.producer_epoch,
            b.base_sequence,
            b.is_transactional,
            b.is_control,
            b.base_offset,
            b.last_offset,
            b.magic,
            int(b.compression),
        )
        for (name, _), value in zip(_BATCH_FIELDS, values, strict=True):
            self.columns[name].append(value)
        self.timestamp_type.append(int(b.timestamp_type))
        self.max_timestamp.append(b.max_timestamp)
        self.delete_horizon.append(b.delete_horizon_ms)
        return len(self.timestamp_type) - 1


@dataclass(slots=True)
class Selection:
    """The records of a segment a second pass builds. ``flags(first, count)`` gives one byte per
    record ``first..first + count`` of the segment (in log order), nonzero for those to build;
    the others are checked, or skipped with their batch, but not stored. Decoding stops before
    the first batch at or past ``records``. ``decoded`` counts the records read so far (built
    or not) and ``batches`` sums over them their batch's base offset plus one (mod 2^64): what
    the first pass read, if they match its own."""

    flags: Callable[[int, int], bytes]
    records: int
    decoded: int = 0
    batches: int = 0

    def read(self, base_offset: int, count: int) -> None:
        self.decoded += count
        self.batches = (self.batches + count * (base_offset + 1)) % (1 << 64)


def _binary(
    kind: pa.DataType, count: int, offsets: Buffer, data: Buffer, valid: Buffer | None
) -> pa.Array:
    null_count = 0
    bitmap = None
    if valid is not None:
        flags = np.frombuffer(valid, dtype=np.uint8)
        null_count = count - int(np.count_nonzero(flags))
        if null_count:
            bitmap = pa.py_buffer(np.packbits(flags, bitorder="little"))
    return pa.Array.from_buffers(
        kind, count, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count
    )


def _millis(values: np.ndarray) -> pa.Array:
    return pa.array(values.astype(np.int64) * 1000, TIMESTAMP)


def to_record_batch(
    cols: ColumnBuffers, meta: _BatchMeta, topic: str, partition: int
) -> pa.RecordBatch:
    n = cols.records
    rows = pa.array(np.frombuffer(cols.batch, dtype=np.int32))
    ts = np.frombuffer(cols.timestamp, dtype=np.int64)
    ts_type = np.asarray(meta.timestamp_type, dtype=np.int32)[rows.to_numpy()]
    # LogAppendTime: every record takes the batch's max timestamp, as Kafka's readers do.
    max_ts = np.asarray(meta.max_timestamp, dtype=np.int64)[rows.to_numpy()]
    ts = np.where(ts_type == TimestampType.LOG_APPEND_TIME, max_ts, ts)
    horizons = pa.array(
        [None if h is None else h * 1000 for h in meta.delete_horizon], TIMESTAMP
    ).take(rows)
    headers = pa.ListArray.from_arrays(
        pa.array(np.frombuffer(cols.header_offsets, dtype=np.int32)),
        pa.StructArray.from_arrays(
            [
                _binary(pa.string(), cols.header_count, cols.hkey_offsets, cols.hkey_data, None),
                _binary(
                    pa.binary(),
                    cols.header_count,
                    cols.hvalue_offsets,
                    cols.hvalue_data,
                    cols.hvalue_valid,
                ),
            ],
            fields=list(HEADER),
        ),
    )
    arrays = {
        "key": _binary(pa.binary(), n, cols.key_offsets, cols.key_data, cols.key_valid),
        "value": _binary(pa.binary(), n, cols.value_offsets, cols.value_data, cols.value_valid),
        "topic": pa.repeat(pa.scalar(topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(partition, pa.int32()), n),
        "offset": pa.array(np.frombuffer(cols.offset, dtype=np.int64)),
        "timestamp": _millis(ts),
        "timestampType": pa.array(ts_type),
        "headers": headers,
        "attributes": pa.array(np.frombuffer(cols.attributes, dtype=np.int8)),
        "delete_horizon": horizons,
    }
    for name, kind in _BATCH_FIELDS:
        arrays[name] = pa.array(meta.columns[name], kind).take(rows)
    return pa.RecordBatch.from_arrays([arrays[f.name] for f in SCHEMA], schema=SCHEMA)


def _reason(e: Exception) -> str:
    # The compiled decoder's ValueError says what the Python one's CorruptBatchError does;
    # anything else names its type, not having been foreseen.
    return str(e) if type(e) is ValueError else f"{type(e).__name__}: {e}"


def decode_segment(
    reader: SegmentReader,
    topic: str,
    partition: int,
    *,
    chunk_records: int = 1 << 15,
    chunk_bytes: int = 64 << 20,
    pure: bool = False,
    values: bool = True,
    headers: bool = True,
    select: Selection | None = None,
) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of every record the reader's segment holds, in log order (each
    value as its validity alone without ``values``, no header without ``headers``; those
    ``select`` flags only, if given).

    Raises :class:`CorruptBatchError` (with file, position and base offset) at the first bad
    batch; everything before it has been yielded already, and the reader's ``valid_bytes`` and
    ``last_offset`` end at the batch before it.
    """
    limits = reader.limits
    builder = column_builder(pure, values=values, headers=headers)
    meta = _BatchMeta()
    try:
        for batch in reader:
            keep = None
            if select is not None:
                if select.decoded >= select.records:
                    break
                keep = select.flags(select.decoded, batch.records_count)
                if keep.count(0) == len(keep):  # none to build: not even decompressed
                    select.read(batch.base_offset, batch.records_count)
                    continue
            try:
                if batch.is_control:  # rare: checked on the reference decoder's records
                    records = functools.partial(batch.records, limits.max_uncompressed_bytes)
                    check_control_records(batch.records_count, records)
                index = meta.add(batch)
                payload = batch.payload(limits.max_uncompressed_bytes)
                head = (batch.records_count, batch.base_offset, batch.base_timestamp)
                delta = batch.last_offset - batch.base_offset
                if (
                    len(builder) + batch.records_count <= chunk_records
                    and builder.nbytes + len(payload) <= chunk_bytes
                ):
                    builder.append(payload, *head, index, delta, keep)
                    if select is not None:
                        select.read(batch.base_offset, batch.records_count)
                    continue
                ends = builder.cuts(payload, *head, delta, chunk_records, chunk_bytes)
                view, start, first = memoryview(payload), 0, 0
                for end, last in np.frombuffer(ends, np.int64).reshape(-1, 2).tolist():
                    if len(builder) and (
                        len(builder) + last - first > chunk_records
                        or builder.nbytes + end - start > chunk_bytes
                    ):
                        yield to_record_batch(builder.finish(), meta, topic, partition)
                        meta = _BatchMeta()
                        index = meta.add(batch)
                    flags = None if keep is None else keep[first:last]
                    builder.append(view[start:end], last - first, *head[1:], index, delta, flags)
                    start, first = end, last
            except (MemoryError, OSError):
                raise  # not the batch's fault
            except Exception as e:  # the batch's content, whatever raised on it
                error = e if isinstance(e, CorruptBatchError) else CorruptBatchError(_reason(e))
                raise error.located(
                    file=reader.path, position=batch.position, base_offset=batch.base_offset
                ) from None
            if select is not None:
                select.read(batch.base_offset, batch.records_count)
            if len(builder) >= chunk_records or builder.nbytes >= chunk_bytes:
                yield to_record_batch(builder.finish(), meta, topic, partition)
                meta = _BatchMeta()
    except CorruptBatchError:
        # Records decoded before a bad batch still come out, ahead of the error.
        if len(builder):
            yield to_record_batch(builder.finish(), meta, topic, partition)
        raise
    if len(builder):
        yield to_record_batch(builder.finish(), meta, topic, partition)


def column_buffers(rows: pa.Table) -> ColumnBuffers:
    """The encoder's view of Arrow rows with columns ``offset`` (int64), ``timestamp`` (int64
    ms), ``attributes`` (int8), ``key``, ``value`` and ``headers`` (as :data:`SCHEMA`): their
    buffers as they are, validity as one byte per entry."""

    def column(name: str) -> pa.Array:
        chunked = rows.column(name)
        values = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
        small = _SMALL.get(name)
        return values if small is None or values.type == small else values.cast(small)

    def fixed(name: str, kind: type[np.generic]) -> bytes:
        values: np.ndarray = column(name).to_numpy(zero_copy_only=False)
        return values.astype(kind).tobytes()

    headers = column("headers")  # may be a slice: its own headers, offsets from 0
    hkeys, hvalues = headers.flatten().flatten()
    header_offsets = headers.offsets.to_numpy()
    key, value = binary_buffers(column("key")), binary_buffers(column("value"))
    hkey, hvalue = binary_buffers(hkeys), binary_buffers(hvalues)
    return ColumnBuffers(
        records=rows.num_rows,
        offset=fixed("offset", np.int64),
        timestamp=fixed("timestamp", np.int64),
        attributes=fixed("attributes", np.int8),
        batch=b"",
        key_offsets=key[0],
        key_data=key[1],
        key_valid=key[2],
        value_offsets=value[0],
        value_data=value[1],
        value_valid=value[2],
        header_offsets=(header_offsets - header_offsets[0]).astype(np.int32).tobytes(),
        header_count=len(hkeys),
        hkey_offsets=hkey[0],
        hkey_data=hkey[1],
        hvalue_offsets=hvalue[0],
        hvalue_data=hvalue[1],
        hvalue_valid=hvalue[2],
    )


# The encoder reads 32-bit offsets; Spark may hand over 64-bit ones
# (spark.sql.execution.arrow.useLargeVarTypes), and so may a caller with more than 2 GiB.
_SMALL = {"key": pa.binary(), "value": pa.binary(), "headers": pa.list_(HEADER)}


def binary_buffers(values: pa.Array) -> tuple[bytes, memoryview | bytes, bytes]:
    """A binary or string array's int32 offsets (n + 1 of them, as sliced), its data buffer and
    one validity byte per entry."""
    _, offsets, data = values.buffers()
    assert offsets is not None
    bounds = np.frombuffer(offsets, np.int32)[values.offset : values.offset + len(values) + 1]
    valid = values.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8).tobytes()
    return bounds.tobytes(), (memoryview(data) if data is not None else b""), valid
