"""Segments of tiny records: millions of records of a few bytes in each compressed batch, the
input whose memory is bounded by records, not bytes.

- :func:`v2_batch`: one v2 batch of ``count`` records (a 4-byte key among ``keys``, or none,
  and an 8-byte value), encoded by the project's C encoder and compressed as a whole.
- :func:`v1_wrapper`: one magic-1 compressed wrapper message of ``count`` inner messages (the
  same keys and values), as old producers wrote them; inner offsets relative, the wrapper
  carrying the last absolute one.
- :func:`write_segment`: batches into ``<directory>/<base offset>.log``.

Built with numpy, not a Python object per record: a batch of ten million records takes seconds.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from segcompact.format.attributes import Compression
from segcompact.format.batch import assemble_batch
from segcompact.format.codecs import codec_for
from segcompact.format.columns import ColumnBuffers, encode_columns
from segcompact.format.writer import segment_name

BASE_TIMESTAMP = 1_700_000_000_000
VALUE_BYTES = 8
KEY_BYTES = 4
_PIECE = 1 << 20  # records encoded at once


def _keys(first: int, count: int, keys: int) -> np.ndarray:
    """Each record's key number: ``offset % keys`` (each key many times)."""
    return (np.arange(first, first + count, dtype=np.int64) % keys).astype(">u4")


def _values(first: int, count: int) -> np.ndarray:
    # Few distinct values: the batches compress as well as the (33 M records in 390 KB).
    return (np.arange(first, first + count, dtype=np.int64) % 16).astype(">u8")


def _payload(first: int, count: int, base: int, keys: int) -> bytes:
    n = count
    ends = np.arange(1, n + 1, dtype=np.int32)
    zeros = np.zeros(n, np.int8).tobytes()
    ones = np.ones(n, np.uint8).tobytes()
    key_data = _keys(first, n, keys).tobytes() if keys else b""
    key_ends = ends * KEY_BYTES if keys else np.zeros(n, np.int32)
    columns = ColumnBuffers(
        records=n,
        offset=np.arange(first, first + n, dtype=np.int64).tobytes(),
        timestamp=np.full(n, BASE_TIMESTAMP, np.int64).tobytes(),
        attributes=zeros,
        batch=b"",
        key_offsets=np.concatenate([[0], key_ends]).astype(np.int32).tobytes(),
        key_data=key_data,
        key_valid=ones if keys else bytes(n),
        value_offsets=np.concatenate([[0], ends * VALUE_BYTES]).astype(np.int32).tobytes(),
        value_data=_values(first, n).tobytes(),
        value_valid=ones,
        header_offsets=bytes(4 * (n + 1)),
        header_count=0,
        hkey_offsets=b"\0\0\0\0",
        hkey_data=b"",
        hvalue_offsets=b"\0\0\0\0",
        hvalue_data=b"",
        hvalue_valid=b"",
    )
    return bytes(encode_columns(columns, 0, n, base, BASE_TIMESTAMP))


def v2_batch(first: int, count: int, compression: Compression, *, keys: int = 0) -> bytes:
    """A v2 batch of records at offsets ``first .. first + count - 1``."""
    body = b"".join(
        _payload(start, min(_PIECE, first + count - start), first, keys)
        for start in range(first, first + count, _PIECE)
    )
    return assemble_batch(
        body,
        count,
        base_offset=first,
        last_offset=first + count - 1,
        base_timestamp=BASE_TIMESTAMP,
        max_timestamp=BASE_TIMESTAMP,
        attributes=int(compression),
    )


# A magic-1 message: offset, size, crc, magic, attributes, timestamp, key length, key, value
# length, value (LegacyRecord.java).
_V1 = np.dtype(
    [
        ("offset", ">i8"),
        ("size", ">i4"),
        ("crc", ">u4"),
        ("magic", "i1"),
        ("attributes", "i1"),
        ("timestamp", ">i8"),
        ("key_length", ">i4"),
        ("key", ">u4"),
        ("value_length", ">i4"),
        ("value", ">u8"),
    ]
)
_V1_CRC_START = 16  # magic..end
_V1_HEAD = struct.Struct(">qiIbbqi")  # a wrapper's fields up to its key length


def v1_wrapper(first: int, count: int, compression: Compression, *, keys: int = 1000) -> bytes:
    """A compressed magic-1 message set of ``count`` inner messages at offsets ``first ..``."""
    inner = np.zeros(count, _V1)
    inner["offset"] = np.arange(count)  # relative: the wrapper carries the last absolute one
    inner["size"] = _V1.itemsize - 12
    inner["magic"] = 1
    inner["timestamp"] = BASE_TIMESTAMP
    inner["key_length"] = KEY_BYTES
    inner["key"] = _keys(first, count, keys)
    inner["value_length"] = VALUE_BYTES
    inner["value"] = _values(first, count)
    raw = inner.view(np.uint8).reshape(count, _V1.itemsize)
    inner["crc"] = [zlib.crc32(row[_V1_CRC_START:].tobytes()) for row in raw]
    value = codec_for(compression).compress(inner.tobytes())
    body = bytearray(
        _V1_HEAD.pack(first + count - 1, 0, 0, 1, int(compression), BASE_TIMESTAMP, -1)
    )
    body += struct.pack(">i", len(value)) + value
    struct.pack_into(">i", body, 8, len(body) - 12)
    struct.pack_into(">I", body, 12, zlib.crc32(memoryview(body)[_V1_CRC_START:]))
    return bytes(body)


def write_segment(directory: Path, base_offset: int, batches: Iterable[bytes]) -> Path:
    """``batches`` as the segment ``<directory>/<base offset>.log`` (no index files)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / segment_name(base_offset)
    with open(path, "wb") as f:
        for batch in batches:
            f.write(batch)
    return path
