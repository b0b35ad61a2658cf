"""Packing compacted records into Kafka segments: batches, segment rolls, the log end.

Pure: records in, files out through ``SegmentWriter`` into an ``OutputDirectory`` the caller
gives. The materialiser gives it one
partition's retained records in offset order.

- Records keep their offsets and timestamps; batches are regrouped up to ``batch_bytes``.
- A batch holding tombstones carries KIP-534's delete horizon (bit 6, base timestamp) no
  earlier than any of its tombstones' horizons.
- Segments roll at ``segment_bytes`` (and before a batch whose offsets would not fit the
  segment's 32-bit relative offsets), as Kafka's log does.
- The partition starts at its log start offset: the first segment is named after it even when
  its first record is later, as Kafka's cleaned logs are, so a broker serving the output reports
  the same low watermark.
- The partition ends at its log end offset: when the last record was compacted away, an empty
  batch at ``log_end_offset - 1`` holds its place (KIP-280's special case).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from segcompact.format.attributes import Compression
from segcompact.format.batch import LOG_OVERHEAD, build_batch
from segcompact.format.io import OutputDirectory
from segcompact.format.record import Header, Record
from segcompact.format.writer import SegmentWriter

DEFAULT_BATCH_BYTES = 1 << 20  # Kafka's default max.message.bytes, about
_MAX_RELATIVE = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class OutputRecord:
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    headers: tuple[Header, ...]
    attributes: int
    tombstone: bool
    delete_horizon: int | None


def size_estimate(r: OutputRecord) -> int:
    """About the bytes ``r`` takes in a batch: its payload plus a record's fixed overhead."""
    return (
        24
        + len(r.key)
        + len(r.value or b"")
        + sum(len(k) + len(v or b"") + 4 for k, v in r.headers)
    )


def _batches(
    records: Iterable[OutputRecord], compression: Compression, batch_bytes: int
) -> Iterator[tuple[int, bytes]]:
    """``(last offset, encoded batch)`` for consecutive groups of about ``batch_bytes``."""
    group: list[OutputRecord] = []
    size = 0

    def flush() -> tuple[int, bytes]:
        horizons = [r.delete_horizon for r in group if r.tombstone and r.delete_horizon is not None]
        batch = build_batch(
            [Record(r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) for r in group],
            compression=compression,
            delete_horizon_ms=max(horizons) if horizons else None,
        )
        return group[-1].offset, batch

    for r in records:
        estimate = size_estimate(r)
        if group and (size + estimate > batch_bytes or r.offset - group[0].offset > _MAX_RELATIVE):
            yield flush()
            group, size = [], 0
        group.append(r)
        size += estimate
    if group:
        yield flush()


@dataclass(frozen=True, slots=True)
class WrittenSegment:
    """A ``.log`` file written (its ``.index`` and ``.timeindex`` beside it)."""

    name: str
    size: int


def write_partition(
    directory: OutputDirectory,
    records: Iterable[OutputRecord],
    *,
    log_end_offset: int,
    log_start_offset: int = 0,
    compression: Compression = Compression.NONE,
    segment_bytes: int = 1 << 30,
    index_interval_bytes: int = 4096,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> list[WrittenSegment]:
    """Write ``records`` (offset order) as segments into ``directory``; return the logs written."""
    written: list[WrittenSegment] = []
    writer: SegmentWriter | None = None
    last = -1

    def close() -> None:
        assert writer is not None
        writer.close()
        written.append(WrittenSegment(writer.log_name, writer.size))

    def append(base_offset: int, batch: bytes) -> None:
        nonlocal writer
        if writer is not None and (
            writer.size + len(batch) > segment_bytes
            or base_offset - writer.base_offset > _MAX_RELATIVE
        ):
            close()
            writer = None
        if writer is None:
            segment_base = base_offset
            if not written and 0 <= base_offset - log_start_offset <= _MAX_RELATIVE:
                segment_base = log_start_offset
            writer = SegmentWriter(
                directory, segment_base, index_interval_bytes=index_interval_bytes
            )
        writer.append(batch)

    try:
        for last_offset, batch in _batches(records, compression, batch_bytes):
            if last_offset >= log_end_offset:
                raise ValueError(
                    f"record at offset {last_offset} is past the log end offset {log_end_offset}"
                )
            append(LOG_OVERHEAD.unpack_from(batch)[0], batch)
            last = last_offset
        if log_end_offset > 0 and last < log_end_offset - 1:
            end = log_end_offset - 1
            append(end, build_batch([], base_offset=end, last_offset=end))
    finally:
        if writer is not None:
            close()
    return written
