"""``segcompact demo``: sample segments in Kafka's log-dir layout, and what segcompact reads.

Until the streaming job lands, the demo writes segments for a few topics (every codec, updates,
tombstones, headers) and dumps one of them.
"""

from __future__ import annotations

import os
from typing import TextIO

from segcompact.dump import dump
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter

DEMO_TOPICS = {
    "orders": Compression.LZ4,
    "users": Compression.ZSTD,
    "payments": Compression.SNAPPY,
    "events": Compression.GZIP,
    "audit": Compression.NONE,
}
_BASE_TS = 1_700_000_000_000


def sample_records(topic: str, count: int, keys: int) -> list[Record]:
    """Updates cycling over ``keys`` keys; every seventh record deletes its key."""
    records = []
    for i in range(count):
        key = f"{topic}-key-{i % keys}".encode()
        value = None if i % 7 == 6 else f'{{"n": {i}, "topic": "{topic}"}}'.encode()
        headers = (("source", b"demo"),) if i % 3 == 0 else ()
        records.append(Record(i, _BASE_TS + i * 1000, key, value, headers))
    return records


def write_sample_log(
    root: str, *, count: int = 200, keys: int = 40, per_batch: int = 25
) -> list[str]:
    """Write one partition per demo topic as two rolled segments; return the .log paths."""
    paths = []
    for topic, codec in DEMO_TOPICS.items():
        directory = os.path.join(root, f"{topic}-0")
        os.makedirs(directory, exist_ok=True)
        records = sample_records(topic, count, keys)
        half = count // 2
        for start, stop in ((0, half), (half, count)):
            with SegmentWriter(directory, start) as writer:
                for i in range(start, stop, per_batch):
                    writer.append(
                        build_batch(records[i : min(i + per_batch, stop)], compression=codec)
                    )
            paths.append(writer.log_path)
    return paths


def run_demo(workdir: str, *, out: TextIO) -> None:
    root = os.path.join(workdir, "segments")
    if os.path.exists(root):
        import shutil

        shutil.rmtree(root)
    paths = write_sample_log(root)
    print(f"wrote {len(paths)} segments for {len(DEMO_TOPICS)} topics under {root}", file=out)
    dump([paths[0]], deep=True, as_json=False, out=out)
