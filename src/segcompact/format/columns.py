"""Column builders: v2 records appended straight into Arrow-ready buffers; and back.

This is the decoder's hot loop. ``PyColumnBuilder`` is the pure-Python reference; the C twin in
``_crecords.c`` has the same interface and must pass the same tests. :func:`column_builder`
returns the C one when it was compiled. :func:`encode_columns` is the way back, the encoder's
hot loop: records of a ``ColumnBuffers`` as v2 record bytes, in C where it was compiled,
byte for byte what ``record.encode_records`` makes of them.

``finish()`` returns :class:`ColumnBuffers`: little-endian fixed-width arrays, and for each
binary column int32 offsets (n + 1 entries), the data, and one validity byte per entry.

What a builder stores is its choice, made once: a builder made with ``values=False`` keeps each
value's validity alone (empty, or null), one with ``headers=False`` no header (a first pass
that ranks records needs neither); and ``append`` given ``keep`` flags stores the records
flagged only (a second pass builds its winners). Every record is checked all the same.
"""

from __future__ import annotations

import functools
import logging
import sys
from array import array
from collections.abc import Callable
from typing import Literal, NamedTuple, Protocol

from segcompact.errors import CorruptBatchError
from segcompact.format.record import Record, encode_records, iter_records
from segcompact.format.varint import decode_varint

# The milliseconds an Arrow timestamp in microseconds (Spark's) holds either side of 1970: a
# record beyond them cannot be stored, and both builders refuse it (``_crecords``' TS_MAX_MS).
MAX_TIMESTAMP_MS = ((1 << 63) - 1) // 1000

# Any contiguous buffer: the decoder hands over bytes, the encoder also takes Arrow's buffers.
Buffer = bytes | memoryview


class ColumnBuffers(NamedTuple):
    records: int
    offset: Buffer  # int64 per record
    timestamp: Buffer  # int64 per record, as stored (base timestamp + delta)
    attributes: Buffer  # int8 per record
    batch: Buffer  # int32 per record: the index passed to append() (the encoder ignores it)
    key_offsets: Buffer
    key_data: Buffer
    key_valid: Buffer
    value_offsets: Buffer
    value_data: Buffer
    value_valid: Buffer
    header_offsets: Buffer  # int32 per record + 1: where its headers start in the header arrays
    header_count: int
    hkey_offsets: Buffer
    hkey_data: Buffer
    hvalue_offsets: Buffer
    hvalue_data: Buffer
    hvalue_valid: Buffer


class ColumnBuilder(Protocol):
    def append(
        self,
        payload: Buffer,
        count: int,
        base_offset: int,
        base_timestamp: int,
        batch: int,
        last_offset_delta: int,
        keep: Buffer | None = None,
    ) -> None:
        """Decode ``count`` records (offset deltas rising within ``0..last_offset_delta``) and
        store those ``keep`` flags (one byte per record, nonzero to store; all without it); on
        corrupt data raise and leave earlier appends intact."""
        ...

    def cuts(
        self,
        payload: Buffer,
        count: int,
        base_offset: int,
        base_timestamp: int,
        last_offset_delta: int,
        records: int,
        nbytes: int,
    ) -> bytes:
        """Check the batch's records as :meth:`append` would, storing none; then where to slice
        the payload so that each slice holds at most ``records`` records and, unless it is one
        record, fewer than ``nbytes`` bytes plus one record: for each slice, its end position
        and the records up to it, as int64 pairs (little-endian). Slices appended one by one
        give what one append of it all gives: a batch of millions of tiny records is decoded a
        slice, and a chunk, at a time."""
        ...

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int:
        """Bytes of keys, values and headers held so far (to bound a chunk)."""
        ...

    def finish(self) -> ColumnBuffers:
        """Hand over the buffers and start empty."""
        ...


class BinaryColumn:
    """A binary column being built: int32 offsets, data, one validity byte per entry."""

    __slots__ = ("data", "offsets", "valid")

    def __init__(self) -> None:
        self.offsets = array("i", [0])
        self.data = bytearray()
        self.valid = bytearray()

    def add(self, value: bytes | None) -> None:
        if value is None:
            self.valid.append(0)
        else:
            self.valid.append(1)
            self.data += value
        self.offsets.append(len(self.data))


def _beyond(ms: int) -> bool:
    return not -MAX_TIMESTAMP_MS <= ms <= MAX_TIMESTAMP_MS


def _check_timestamp(i: int, ms: int) -> None:
    if _beyond(ms):
        raise CorruptBatchError(
            f"record {i}: timestamp {ms} ms is out of range (a timestamp in microseconds holds "
            f"+-{MAX_TIMESTAMP_MS} ms)"
        )


class PyColumnBuilder:
    """The pure-Python column builder."""

    def __init__(self, *, values: bool = True, headers: bool = True) -> None:
        self._values = values
        self._headers = headers
        self._reset()

    def _reset(self) -> None:
        self._offset = array("q")
        self._timestamp = array("q")
        self._attributes = bytearray()
        self._batch = array("i")
        self._key = BinaryColumn()
        self._value = BinaryColumn()
        self._header_offsets = array("i", [0])
        self._hkey = BinaryColumn()
        self._hvalue = BinaryColumn()

    def __len__(self) -> int:
        return len(self._offset)

    @property
    def nbytes(self) -> int:
        return (
            len(self._key.data)
            + len(self._value.data)
            + len(self._hkey.data)
            + len(self._hvalue.data)
        )

    def cuts(
        self,
        payload: Buffer,
        count: int,
        base_offset: int,
        base_timestamp: int,
        last_offset_delta: int,
        records: int,
        nbytes: int,
    ) -> bytes:
        if records < 1 or nbytes < 1:
            raise ValueError("cuts: records and bytes must be positive")
        payload = bytes(payload)
        decoded = iter_records(payload, count, base_offset, base_timestamp, last_offset_delta)
        # As append: every record decodes before any timestamp is checked.
        beyond: tuple[int, int] | None = None
        for i, r in enumerate(decoded):
            if beyond is None and _beyond(r.timestamp):
                beyond = i, r.timestamp
        if beyond is not None:
            _check_timestamp(*beyond)
        out = array("q")
        pos = start = first = 0
        for i in range(count):
            length, pos = decode_varint(payload, pos)
            pos += length
            if i + 1 - first >= records or pos - start >= nbytes or i + 1 == count:
                out.extend((pos, i + 1))
                first, start = i + 1, pos
        return out.tobytes()

    def append(
        self,
        payload: Buffer,
        count: int,
        base_offset: int,
        base_timestamp: int,
        batch: int,
        last_offset_delta: int,
        keep: Buffer | None = None,
    ) -> None:
        payload = bytes(payload)  # a slice of a payload may come as a memoryview
        if keep is not None and len(keep) != count:
            raise ValueError(f"keep holds {len(keep)} flags for {count} records")
        # Decode fully first, so a corrupt batch leaves the columns as they were.
        records = list(iter_records(payload, count, base_offset, base_timestamp, last_offset_delta))
        for i, r in enumerate(records):
            _check_timestamp(i, r.timestamp)
        flags = bytes(keep) if keep is not None else None
        for i, r in enumerate(records):
            if flags is not None and not flags[i]:
                continue
            self._offset.append(r.offset)
            self._timestamp.append(r.timestamp)
            self._attributes.append(r.attributes)
            self._batch.append(batch)
            self._key.add(r.key)
            self._value.add(r.value if self._values or r.value is None else b"")
            for hkey, hvalue in r.headers if self._headers else ():
                self._hkey.add(hkey.encode("utf-8"))
                self._hvalue.add(hvalue)
            self._header_offsets.append(len(self._hkey.valid))

    def finish(self) -> ColumnBuffers:
        out = ColumnBuffers(
            records=len(self._offset),
            offset=self._offset.tobytes(),
            timestamp=self._timestamp.tobytes(),
            attributes=bytes(self._attributes),
            batch=self._batch.tobytes(),
            key_offsets=self._key.offsets.tobytes(),
            key_data=bytes(self._key.data),
            key_valid=bytes(self._key.valid),
            value_offsets=self._value.offsets.tobytes(),
            value_data=bytes(self._value.data),
            value_valid=bytes(self._value.valid),
            header_offsets=self._header_offsets.tobytes(),
            header_count=len(self._hkey.valid),
            hkey_offsets=self._hkey.offsets.tobytes(),
            hkey_data=bytes(self._hkey.data),
            hvalue_offsets=self._hvalue.offsets.tobytes(),
            hvalue_data=bytes(self._hvalue.data),
            hvalue_valid=bytes(self._hvalue.valid),
        )
        self._reset()
        return out


def column_builder(
    pure: bool = False, *, values: bool = True, headers: bool = True
) -> ColumnBuilder:
    """The compiled builder where it was built (and ``pure`` is false), else the Python one
    (with a warning, once: it decodes some 20 times slower); ``values`` and ``headers`` say
    what it stores (the module's docstring)."""
    if not pure:
        try:
            from segcompact.format._crecords import CColumnBuilder
        except ImportError:
            warn_pure()
        else:
            return CColumnBuilder(values=values, headers=headers)  # type: ignore[no-any-return]
    return PyColumnBuilder(values=values, headers=headers)


def encode_columns(
    columns: ColumnBuffers,
    start: int,
    stop: int,
    base_offset: int,
    base_timestamp: int,
    *,
    pure: bool = False,
) -> bytes:
    """The length-prefixed v2 bytes of records ``start..stop`` (timestamps in ms): the C
    encoder where it was built (and ``pure`` is false), else through ``encode_records``."""
    if not pure:
        try:
            from segcompact.format._crecords import encode_records as encode
        except ImportError:
            warn_pure()
        else:
            return encode(columns, start, stop, base_offset, base_timestamp)  # type: ignore[no-any-return]
    return encode_records(records_of(columns, start, stop), base_offset, base_timestamp)


def records_of(columns: ColumnBuffers, start: int, stop: int) -> list[Record]:
    """Records ``start..stop`` of ``columns`` as :class:`Record` objects."""

    def entries(
        offsets: Buffer, data: Buffer, valid: Buffer | None
    ) -> Callable[[int], bytes | None]:
        bounds = _ints(offsets, "i")
        flags = None if valid is None else _ints(valid, "B")
        view = memoryview(data)  # of a whole chunk, when the columns are a slice of it

        def at(i: int) -> bytes | None:
            if flags is not None and not flags[i]:
                return None
            return bytes(view[bounds[i] : bounds[i + 1]])

        return at

    key = entries(columns.key_offsets, columns.key_data, columns.key_valid)
    value = entries(columns.value_offsets, columns.value_data, columns.value_valid)
    hkey = entries(columns.hkey_offsets, columns.hkey_data, None)
    hvalue = entries(columns.hvalue_offsets, columns.hvalue_data, columns.hvalue_valid)
    offsets = _ints(columns.offset, "q")
    timestamps = _ints(columns.timestamp, "q")
    attributes = _ints(columns.attributes, "b")
    headers = _ints(columns.header_offsets, "i")
    return [
        Record(
            int(offsets[i]),
            int(timestamps[i]),
            key(i),
            value(i),
            tuple(
                ((hkey(h) or b"").decode("utf-8"), hvalue(h))
                for h in range(headers[i], headers[i + 1])
            ),
            int(attributes[i]) & 0xFF,
        )
        for i in range(start, stop)
    ]


def _ints(buffer: Buffer, kind: Literal["b", "B", "i", "q"]) -> memoryview:
    """``buffer``'s bytes as native integers of struct format ``kind``, as numpy's
    ``frombuffer`` would read them, without numpy: the shipper reads segments and has no other
    use for it."""
    return memoryview(buffer).cast("B").cast(kind)


@functools.cache
def warn_pure() -> None:
    logging.getLogger("segcompact").warning(
        "segcompact's C extensions (the record decoder, the compaction front) are not built "
        "for this Python (%s); using their pure-Python twins, many times slower: install a "
        "wheel built for it",
        sys.version.split()[0],
    )
