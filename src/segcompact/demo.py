"""``segcompact demo``: sample segments, a config, one full run, and what it compacted."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import TextIO

from segcompact.config import load_config
from segcompact.format.attributes import Compression
from segcompact.samples import generate_partition

# topic: (strategy, tombstone mode, codec, transactions)
DEMO_TOPICS = {
    "orders": ("timestamp", "null-value", Compression.LZ4, False),
    "users": ("offset", "null-value", Compression.ZSTD, False),
    "inventory": ("header", "null-value", Compression.SNAPPY, False),
    "sessions": ("offset", "header", Compression.GZIP, False),
    "payments": ("offset", "null-value", Compression.NONE, True),
}
PARTITIONS = 2


def write_demo(workdir: Path, *, seed: int = 42) -> Path:
    """Sample log dirs and a config under ``workdir``; return the config's path."""
    rnd = random.Random(seed)
    segments = workdir / "segments"
    for topic, (_, _, codec, txn) in DEMO_TOPICS.items():
        for p in range(PARTITIONS):
            for seg in generate_partition(rnd, records=600, keys=40, codec=codec, transactions=txn):
                seg.write(segments / f"{topic}-{p}")
    lines = [
        "# Written by `segcompact demo`.",
        "[source]",
        f'paths = ["{segments}"]',
        "rolled_only = true",
        "[state]",
        f'table = "{workdir / "state"}"',
        f'partitions_table = "{workdir / "partitions"}"',
        f'pending_table = "{workdir / "pending_txn"}"',
        f'ledger_table = "{workdir / "deletion_ledger"}"',
        "[output]",
        f'path = "{workdir / "compacted"}"',
        "[stream]",
        f'checkpoint = "{workdir / "checkpoints"}"',
        "[defaults]",
        '"delete.retention.ms" = 86400000',
    ]
    for topic, (strategy, mode, _, _) in DEMO_TOPICS.items():
        lines += [
            f'[topics."{topic}"]',
            f'"compaction.strategy" = "{strategy}"',
            f'"compaction.tombstone.mode" = "{mode}"',
        ]
        if strategy == "header":
            lines.append('"compaction.strategy.header" = "v"')
    config = workdir / "compactor.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def run_demo(workdir: str, *, out: TextIO) -> None:
    from segcompact.spark.job import Compactor
    from segcompact.spark.session import get_spark
    from segcompact.spark.status import partition_status

    root = Path(workdir).resolve()
    if root.exists():
        shutil.rmtree(root)
    config_path = write_demo(root)
    config = load_config(config_path)
    print(f"wrote sample segments and {config_path}", file=out)
    spark = get_spark(app_name="segcompact-demo")
    compactor = Compactor(spark, config)
    compactor.run_once()
    print(f"compacted into the Delta table {config.state.table}:", file=out)
    for row in partition_status(spark, config, compactor.tables, compactor.clock.now_ms()):
        print(
            f"  {row['topic']}-{row['partition']}: offsets {row['log_start_offset']}.."
            f"{row['log_end_offset']}, {row['records']} records -> {row['keys']} keys kept "
            f"({row['tombstones_pending']} tombstones), {row['keyless_records']} keyless dropped",
            file=out,
        )
