"""Tens of thousands of tiny records in a few batches (a gzip v2 batch, a v1 gzip wrapper, a
zstd batch of keyless records) through the real ``kafka-segments`` source with small chunks:
every record comes out exact, and reduced, every keyless one and the latest of every key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.compaction.rules import Rankings
from segcompact.format.attributes import Compression
from segcompact.spark.source import register
from tests.support import tiny_log

pytestmark = pytest.mark.spark

# (first offset, records, codec, distinct keys; 0: keyless), v1 for the wrapper.
BATCHES = [
    (0, 20_000, Compression.GZIP, 100, False),
    (20_000, 5_000, Compression.GZIP, 50, True),
    (25_000, 10_000, Compression.ZSTD, 0, False),
]


def _expected() -> list[tuple[int, bytes | None, bytes]]:
    """(offset, key, value) of every record, as tiny_log makes them."""
    out = []
    for first, count, _, keys, _ in BATCHES:
        for o in range(first, first + count):
            key = (o % keys).to_bytes(4, "big") if keys else None
            out.append((o, key, (o % 16).to_bytes(8, "big")))
    return out


def test_tiny_records_come_out_exact_in_small_chunks(spark: SparkSession, tmp_path: Path) -> None:
    register(spark)
    batches = [
        (tiny_log.v1_wrapper if v1 else tiny_log.v2_batch)(first, n, codec, keys=keys)
        for first, n, codec, keys, v1 in BATCHES
    ]
    tiny_log.write_segment(tmp_path / "tiny-0", 0, batches)
    expected = _expected()

    def read(**options: str) -> list[tuple[int, bytes | None, bytes]]:
        reader = spark.read.format("kafka-segments").option("rolledOnly", "false")
        reader = reader.option("chunkRecords", "700").option("chunkBytes", "4000")
        for name, value in options.items():
            reader = reader.option(name, value)
        rows = reader.load(str(tmp_path)).select("offset", "key", "value").collect()
        return sorted((r.offset, r.key, r.value) for r in rows)

    assert read() == expected
    # Reduced in rounds (the small chunks make a small budget): each round keeps the latest of
    # its keys, and the merge reduces across rounds; the latest of each key is among them.
    reduced = read(compaction=Rankings().to_json())
    assert set(reduced) <= set(expected)
    assert [r for r in reduced if r[1] is None] == [r for r in expected if r[1] is None]
    latest: dict[bytes, int] = {}
    for offset, key, _ in expected + reduced:
        if key is not None:
            latest[key] = max(latest.get(key, -1), offset)
    assert {(k, o) for o, k, _ in reduced if k is not None} >= set(latest.items())
    assert len(reduced) < len(expected)
