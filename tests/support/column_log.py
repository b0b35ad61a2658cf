"""Kafka segments built from columns: millions of records a second, for benchmarks that need a
large log or state quickly.

Records are made with numpy (keys ``customer-<9 digits>``, values drawn from a pool of JSON-like
values of 100-200 bytes, tombstones as null values) and written by the materialiser's own writer
(``compaction.output.PartitionWriter``: records encoded in C, lz4 batches of ``batch_bytes``,
``.index`` and ``.timeindex`` beside each ``.log``), which the unit tests hold byte for byte to
the pure encoder and the interop tests to Kafka.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from segcompact.compaction.output import ROWS, WrittenSegment
from segcompact.format.arrow import HEADER
from segcompact.format.attributes import Compression
from segcompact.storage import LocalOutputDirectory
from tests.support.keyed_log import key_bytes, value_bytes
from tests.support.output import write_partition

BATCH_BYTES = 16 << 10  # a producer's default batch.size
_PREFIX = np.frombuffer(key_bytes(0)[:-9], dtype=np.uint8)
_POWERS = 10 ** np.arange(8, -1, -1, dtype=np.int64)


def keys_array(keys: NDArray[np.int64]) -> pa.BinaryArray:
    """``key_bytes(k)`` of every ``k``, built without a Python object per key."""
    n = len(keys)
    digits = (keys[:, None] // _POWERS) % 10 + ord("0")
    data = np.empty((n, len(_PREFIX) + 9), dtype=np.uint8)
    data[:, : len(_PREFIX)] = _PREFIX
    data[:, len(_PREFIX) :] = digits
    offsets = np.arange(0, data.size + 1, data.shape[1], dtype=np.int32)
    return pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())]
    )


def value_pool(rng: random.Random, size: int = 4096) -> pa.BinaryArray:
    return pa.array([value_bytes(rng, i) for i in range(size)], pa.binary())


CHUNK_RECORDS = 1 << 20


def rows(
    offsets: NDArray[np.int64],
    keys: NDArray[np.int64],
    tombstones: NDArray[np.bool_],
    pool: pa.BinaryArray,
    rng: np.random.Generator,
    base_timestamp: int,
) -> pa.Table:
    """:data:`ROWS` of records at ``offsets`` (rising) with these keys; a record's timestamp is
    ``base_timestamp`` plus its offset in milliseconds. Chunks of :data:`CHUNK_RECORDS`, as
    Spark hands them over (one binary array's 32-bit offsets hold 2 GiB)."""
    n = len(offsets)
    if n > CHUNK_RECORDS:
        return pa.concat_tables(
            rows(offsets[i:j], keys[i:j], tombstones[i:j], pool, rng, base_timestamp)
            for i, j in ((i, min(n, i + CHUNK_RECORDS)) for i in range(0, n, CHUNK_RECORDS))
        )
    values = pc.take(pool, pa.array(rng.integers(0, len(pool), n)))
    values = pc.if_else(pa.array(tombstones), pa.scalar(None, pa.binary()), values)
    no_headers = pa.ListArray.from_arrays(
        pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], HEADER)
    )
    return pa.table(
        [
            pa.array(offsets, pa.int64()),
            pa.array(offsets + base_timestamp, pa.int64()),
            keys_array(keys),
            values,
            no_headers,
            pa.array(np.zeros(n, dtype=np.int8)),
            pa.array(tombstones),
            pa.nulls(n, pa.int64()),
        ],
        schema=ROWS,
    )


def write(directory: Path, records: pa.Table, segment_bytes: int = 1 << 30) -> list[WrittenSegment]:
    """``records`` as lz4 segments in ``directory``, the first based at its first offset."""
    first = int(records.column("offset")[0].as_py())
    last = int(records.column("offset")[-1].as_py())
    return write_partition(
        LocalOutputDirectory(directory),
        records,
        log_end_offset=last + 1,
        log_start_offset=first,
        compression=Compression.LZ4,
        segment_bytes=segment_bytes,
        batch_bytes=BATCH_BYTES,
    )
