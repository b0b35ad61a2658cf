"""Packing compacted records into Kafka segments: batches, segment rolls, the log end.

Pure: Arrow rows in (:data:`ROWS`), files out through ``SegmentWriter`` into an
``OutputDirectory`` the caller gives. The materialiser gives it one partition's retained records
in offset order, a part at a time (:class:`PartitionWriter`), and it holds about a slice of them
(:data:`SLICE_BYTES`) at once, however large the partition. Records are encoded from the
columns' buffers in C (``columns.encode_columns``, byte for byte the pure encoder's); Python runs
once per batch, not per record.

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

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from segcompact.format.arrow import HEADER, column_buffers
from segcompact.format.attributes import BatchAttr, Compression
from segcompact.format.batch import LOG_OVERHEAD, assemble_batch, build_batch
from segcompact.format.columns import encode_columns
from segcompact.format.io import OutputDirectory
from segcompact.format.writer import SegmentWriter

DEFAULT_BATCH_BYTES = 1 << 20  # Kafka's default max.message.bytes, about
_MAX_RELATIVE = 0x7FFFFFFF
# A record's fixed overhead in a batch, about (length, attributes, deltas, sizes).
_RECORD_OVERHEAD = 24
_HEADER_OVERHEAD = 4
# Records are encoded from slices of about this many bytes: buffers with 32-bit offsets, and a
# bounded copy however large the partition.
SLICE_BYTES = 16 << 20

# An uncleanable reason of a partition whose rows were merged but whose output could not be
# written: not unread source data (its erasure waits in the ledger's rounds instead).
OUTPUT_NOT_WRITTEN = "output not written"
# What PartitionWriter reads: a partition's retained records, in offset order.
ROWS = pa.schema(
    [
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),  # epoch ms
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(HEADER), nullable=False),
        pa.field("attributes", pa.int8(), nullable=False),  # the record's attributes byte
        pa.field("tombstone", pa.bool_(), nullable=False),
        pa.field("delete_horizon", pa.int64()),  # epoch ms, for tombstones
    ]
)


def batch_bounds(
    offsets: NDArray[np.int64], sizes: NDArray[np.int64], batch_bytes: int
) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive groups of records: each as long as its sizes sum to at
    most ``batch_bytes`` and its offsets span a batch's 32-bit range, and at least one record."""
    total = np.concatenate([[0], np.cumsum(sizes)])
    n, start = len(offsets), 0
    while start < n:
        by_size = int(np.searchsorted(total, total[start] + batch_bytes, side="right")) - 1
        by_span = int(np.searchsorted(offsets, offsets[start] + _MAX_RELATIVE, side="right"))
        stop = max(start + 1, min(by_size, by_span))
        yield start, stop
        start = stop


def _binary_lengths(values: pa.ChunkedArray | pa.Array) -> NDArray[np.int64]:
    lengths: NDArray[np.int64] = pc.fill_null(pc.binary_length(values), 0).to_numpy()
    return lengths.astype(np.int64)


def record_sizes(rows: pa.Table) -> NDArray[np.int64]:
    """About the bytes each record takes in a batch: its key, value and headers' bytes plus a
    record's (and each header's) fixed overhead."""
    headers = rows.column("headers")
    flat = pc.list_flatten(headers)
    header_bytes = np.bincount(
        pc.list_parent_indices(headers).to_numpy(),
        weights=_binary_lengths(pc.struct_field(flat, "key"))
        + _binary_lengths(pc.struct_field(flat, "value"))
        + _HEADER_OVERHEAD,
        minlength=rows.num_rows,
    )
    sizes: NDArray[np.int64] = (
        _RECORD_OVERHEAD
        + _binary_lengths(rows.column("key"))
        + _binary_lengths(rows.column("value"))
        + header_bytes.astype(np.int64)
    )
    return sizes


def _slice_bounds(sizes: NDArray[np.int64], slice_bytes: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive slices of records of these sizes, each of at most
    ``slice_bytes`` or one record."""
    total = np.concatenate([[0], np.cumsum(sizes)])
    bounds, start = [], 0
    while start < len(sizes):
        stop = int(np.searchsorted(total, total[start] + slice_bytes, side="right")) - 1
        stop = max(start + 1, stop)
        bounds.append((start, stop))
        start = stop
    return bounds


def _batches(
    rows: pa.Table,
    sizes: NDArray[np.int64],
    compression: Compression,
    batch_bytes: int,
    pure: bool,
) -> Iterator[tuple[int, bytes]]:
    """``(last offset, encoded batch)`` for consecutive groups of about ``batch_bytes`` of one
    slice's records of these :func:`record_sizes`. A group holding tombstones carries KIP-534's
    delete horizon: the latest of theirs."""
    columns = column_buffers(rows)
    offsets = np.frombuffer(columns.offset, np.int64)
    timestamps = np.frombuffer(columns.timestamp, np.int64)
    none = np.iinfo(np.int64).min
    horizons = pc.fill_null(
        pc.if_else(rows.column("tombstone"), rows.column("delete_horizon"), None), none
    ).to_numpy()
    for start, stop in batch_bounds(offsets, sizes, batch_bytes):
        latest = int(np.max(horizons[start:stop]))
        horizon = None if latest == none else latest
        base_timestamp = int(timestamps[start]) if horizon is None else horizon
        body = encode_columns(columns, start, stop, int(offsets[start]), base_timestamp, pure=pure)
        attributes = int(compression) | (BatchAttr.DELETE_HORIZON if horizon is not None else 0)
        yield (
            int(offsets[stop - 1]),
            assemble_batch(
                body,
                stop - start,
                base_offset=int(offsets[start]),
                last_offset=int(offsets[stop - 1]),
                base_timestamp=base_timestamp,
                max_timestamp=int(np.max(timestamps[start:stop])),
                attributes=attributes,
            ),
        )


@dataclass(frozen=True, slots=True)
class WrittenSegment:
    """A ``.log`` file written (its ``.index`` and ``.timeindex`` beside it)."""

    name: str
    size: int


class PartitionWriter:
    """Writes one partition's records (:data:`ROWS`) as segments into ``directory``, given in
    offset order a part at a time (:meth:`add`); :meth:`close` ends the partition at its log end
    offset and returns the logs written. It holds about a slice of records
    (:data:`SLICE_BYTES`), however large the partition, and writes the same bytes however the
    records were split. ``pure``: records encoded in Python (the twin the C encoder is held to).
    """

    def __init__(
        self,
        directory: OutputDirectory,
        *,
        log_end_offset: int,
        log_start_offset: int = 0,
        compression: Compression = Compression.NONE,
        segment_bytes: int = 1 << 30,
        index_interval_bytes: int = 4096,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        pure: bool = False,
    ) -> None:
        self.directory = directory
        self.log_end_offset = log_end_offset
        self.log_start_offset = log_start_offset
        self.compression = compression
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.batch_bytes = batch_bytes
        self.pure = pure
        self.written: list[WrittenSegment] = []
        self._segment: SegmentWriter | None = None
        self._last = -1
        # Records added but not encoded yet, with their sizes (:func:`record_sizes`).
        self._pending: list[pa.Table] = []
        self._pending_sizes: list[NDArray[np.int64]] = []
        self._pending_bytes = 0

    def add(self, rows: pa.Table) -> None:
        """Records following the ones added before, in offset order."""
        sizes = record_sizes(rows)
        self._pending.append(rows)
        self._pending_sizes.append(sizes)
        self._pending_bytes += int(sizes.sum())
        if self._pending_bytes > SLICE_BYTES:
            self._encode_pending(keep_last=True)

    def close(self) -> list[WrittenSegment]:
        with self._closed_on_error():
            self._encode_pending(keep_last=False)
            end = self.log_end_offset - 1
            if self.log_end_offset > 0 and self._last < end:
                self._append(end, end, build_batch([], base_offset=end, last_offset=end))
        if self._segment is not None:
            self._close_segment()
        return self.written

    def _encode_pending(self, *, keep_last: bool) -> None:
        """Encode the pending records slice by slice; with ``keep_last``, all but the last
        slice, which later records may fill."""
        if not self._pending:
            return
        rows = pa.concat_tables(self._pending)
        sizes = np.concatenate(self._pending_sizes)
        bounds = _slice_bounds(sizes, SLICE_BYTES)
        rest = bounds.pop()[0] if keep_last else len(sizes)
        with self._closed_on_error():
            for start, stop in bounds:
                self._encode(rows.slice(start, stop - start), sizes[start:stop])
        self._pending = [rows.slice(rest)] if rest < len(sizes) else []
        self._pending_sizes = [sizes[rest:]] if rest < len(sizes) else []
        self._pending_bytes = int(sizes[rest:].sum())

    @contextmanager
    def _closed_on_error(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            if self._segment is not None:
                self._close_segment()
            raise

    def _encode(self, part: pa.Table, sizes: NDArray[np.int64]) -> None:
        for last_offset, batch in _batches(
            part, sizes, self.compression, self.batch_bytes, self.pure
        ):
            if last_offset >= self.log_end_offset:
                raise ValueError(
                    f"record at offset {last_offset} is past the log end offset "
                    f"{self.log_end_offset}"
                )
            self._append(LOG_OVERHEAD.unpack_from(batch)[0], last_offset, batch)
            self._last = last_offset

    def _close_segment(self) -> None:
        assert self._segment is not None
        segment, self._segment = self._segment, None
        segment.close()
        self.written.append(WrittenSegment(segment.log_name, segment.size))

    def _append(self, base_offset: int, last_offset: int, batch: bytes) -> None:
        # As Kafka's log rolls: a segment must hold the batch's last offset relative to its base.
        segment = self._segment
        if segment is not None and (
            segment.size + len(batch) > self.segment_bytes
            or last_offset - segment.base_offset > _MAX_RELATIVE
        ):
            self._close_segment()
            segment = None
        if segment is None:
            segment_base = base_offset
            if not self.written and 0 <= last_offset - self.log_start_offset <= _MAX_RELATIVE:
                segment_base = self.log_start_offset
            segment = self._segment = SegmentWriter(
                self.directory, segment_base, index_interval_bytes=self.index_interval_bytes
            )
        segment.append(batch)
