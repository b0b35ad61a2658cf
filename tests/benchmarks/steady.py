"""Steady state: one-segment micro-batches on top of a large state, per table layout.

    python -m tests.benchmarks.steady --keys 1000000 --keys 10000000 [--batches 20]
        [--updates 20000] [--partitions 8] [--layout default --layout rewrite ...]

For each number of keys a log is generated once and cached under ``--workdir``
(``tests/support/column_log.py``): one topic of ``--partitions`` partitions holding every key
once (the base), and ``--batches`` update segments of ``--updates`` records each (5 %
tombstones), on the partitions in turn, each on a random sample of that partition's keys.

Then for each layout of the state table, in one Spark session:

1. the base: ``Compactor.run_once()`` over the base segments on fresh tables (timed, reported,
   not the point);
2. the update segments are added to the source, and ``run_once()`` again with
   ``max_segments_per_batch = 1``: one micro-batch per segment, each timed by the query's own
   progress (``triggerExecution``), and Delta's metrics of each state MERGE read from the
   table's history (files removed and added, rows copied, deletion vectors added).

Layouts: ``default`` (what segcompact creates: partitioned by topic and partition, with
deletion vectors, compacted by segcompact), ``rewrite`` (partitioned, without deletion vectors: each
MERGE rewrites the files of the partitions it touches; segcompact's default before) and
``clustered`` (liquid clustering by topic and partition, with deletion vectors). The state table
is created before the base for the last two; segcompact keeps an existing table's layout.

The issue's target: the median micro-batch at 10 M keys within 1.3x of the one at 1 M. Every
state is checked against the generator's (rows, tombstones, sum of offsets). Time comes from a
manual clock (no tombstone expires). Nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from segcompact.clock import ManualClock
from segcompact.config import load_config
from segcompact.spark.job import Compactor
from segcompact.spark.session import get_spark
from segcompact.spark.tables import STATE_SCHEMA
from tests.benchmarks import options
from tests.benchmarks.measure import Phases, QueryProgress, Stopwatch
from tests.support import column_log
from tests.support.config import write_config
from tests.support.keyed_log import BASE_TIMESTAMP, TOPIC

FORMAT_VERSION = 1  # bump when generation changes, to invalidate cached logs
TOMBSTONE_RATE = 0.05
SEGMENT_BYTES = 128 << 20
# Later than any record's timestamp, earlier than any horizon: nothing expires.
NOW_MS = BASE_TIMESTAMP + 10 * 24 * 3600 * 1000
MERGE_METRICS = (
    "numTargetFilesRemoved",
    "numTargetFilesAdded",
    "numTargetRowsCopied",
    "numTargetRowsUpdated",
    "numTargetRowsInserted",
    "numTargetDeletionVectorsAdded",
    "numTargetBytesRemoved",
    "numTargetBytesAdded",
    "scanTimeMs",
    "rewriteTimeMs",
    "executionTimeMs",
)

# --- The log ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SteadyLog:
    root: str  # base/<topic>-<p>/ and updates/<i>/<topic>-<p>/
    keys: int
    partitions: int
    batches: int
    updates: int
    base_bytes: int
    update_bytes: int
    # What the state must hold after the updates.
    rows: int
    tombstones: int
    offset_sum: int
    generate_seconds: float
    cached: bool = False

    def base(self) -> Path:
        return Path(self.root) / "base"

    def update(self, i: int) -> Path:
        return Path(self.root) / "updates" / f"{i:04d}"


def generate(
    workdir: Path, keys: int, partitions: int, batches: int, updates: int, seed: int
) -> SteadyLog:
    """The cached log for these parameters, generated if missing."""
    name = f"steady-{keys}k-{partitions}p-{batches}x{updates}-s{seed}-v{FORMAT_VERSION}"
    where = workdir / name
    meta = where / "meta.json"
    if meta.exists():
        return SteadyLog(**{**json.loads(meta.read_text()), "cached": True})
    shutil.rmtree(where, ignore_errors=True)
    began = time.perf_counter()
    staging = where / "staging"
    rng = np.random.default_rng(seed)
    pool = column_log.value_pool(random.Random(seed))
    own = [np.arange(p, keys, partitions, dtype=np.int64) for p in range(partitions)]
    # Per partition, each own key's last offset and whether it is a tombstone.
    last = [np.empty(len(k), dtype=np.int64) for k in own]
    dead = [np.zeros(len(k), dtype=np.bool_) for k in own]
    ends = [0] * partitions
    base_bytes = update_bytes = 0
    for p in range(partitions):
        order = rng.permutation(len(own[p]))
        offsets = np.arange(len(order), dtype=np.int64)
        last[p][order] = offsets
        records = column_log.rows(offsets, own[p][order], dead[p][order], pool, rng, BASE_TIMESTAMP)
        written = column_log.write(staging / "base" / f"{TOPIC}-{p}", records, SEGMENT_BYTES)
        base_bytes += sum(w.size for w in written)
        ends[p] = len(order)
    for i in range(batches):
        p = i % partitions
        picked = rng.choice(len(own[p]), size=min(updates, len(own[p])), replace=False)
        offsets = np.arange(ends[p], ends[p] + len(picked), dtype=np.int64)
        tombstones = rng.random(len(picked)) < TOMBSTONE_RATE
        last[p][picked], dead[p][picked] = offsets, tombstones
        records = column_log.rows(offsets, own[p][picked], tombstones, pool, rng, BASE_TIMESTAMP)
        directory = staging / "updates" / f"{i:04d}" / f"{TOPIC}-{p}"
        written = column_log.write(directory, records, SEGMENT_BYTES)
        if len(written) != 1:
            raise AssertionError(f"update {i} took {len(written)} segments")
        update_bytes += written[0].size
        ends[p] += len(picked)
    staging.rename(where / "logs")
    log = SteadyLog(
        root=str(where / "logs"),
        keys=keys,
        partitions=partitions,
        batches=batches,
        updates=updates,
        base_bytes=base_bytes,
        update_bytes=update_bytes,
        rows=keys,
        tombstones=int(sum(d.sum() for d in dead)),
        offset_sum=int(sum(x.sum() for x in last)),
        generate_seconds=time.perf_counter() - began,
    )
    info = asdict(log)
    del info["cached"]
    meta.write_text(json.dumps(info))
    return log


def link_segments(source: Path, into: Path) -> int:
    """Hard-link every file of ``source``'s partition directories into ``into``'s; the number
    of ``.log`` files."""
    n = 0
    for f in sorted(source.glob("*/*")):
        target = into / f.parent.name / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(f, target)
        n += f.suffix == ".log"
    return n


# --- Layouts ---------------------------------------------------------------------------------


def _create(by: str, properties: dict[str, str]) -> Callable[[SparkSession, str], None]:
    def create(spark: SparkSession, path: str) -> None:
        builder = DeltaTable.create(spark).location(path).addColumns(STATE_SCHEMA)
        builder = (
            builder.partitionedBy("topic", "partition")
            if by == "partition"
            else builder.clusterBy("topic", "partition")
        )
        for k, v in properties.items():
            builder = builder.property(k, v)
        builder.execute()

    return create


# The state table made before segcompact starts (None: segcompact creates it).
LAYOUTS: dict[str, Callable[[SparkSession, str], None] | None] = {
    "default": None,
    "rewrite": _create("partition", {}),
    "clustered": _create("cluster", {"delta.enableDeletionVectors": "true"}),
}


# --- A run -----------------------------------------------------------------------------------


def merge_metrics(spark: SparkSession, table: str, after: int) -> list[dict[str, int]]:
    """Delta's operation metrics of the MERGEs into ``table`` after version ``after``."""
    history = (
        DeltaTable.forPath(spark, table)
        .history()
        .where((F.col("version") > after) & (F.col("operation") == "MERGE"))
        .orderBy("version")
        .collect()
    )
    return [{k: int(row["operationMetrics"].get(k, 0)) for k in MERGE_METRICS} for row in history]


def check(spark: SparkSession, table: str, log: SteadyLog) -> dict[str, Any]:
    row = (
        spark.read.format("delta")
        .load(table)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count(F.when(F.col("tombstone"), 1)).alias("tombstones"),
            F.sum("offset").alias("offset_sum"),
        )
        .first()
    )
    assert row is not None
    got = {k: int(row[k] or 0) for k in ("rows", "tombstones", "offset_sum")}
    want = {"rows": log.rows, "tombstones": log.tombstones, "offset_sum": log.offset_sum}
    return {"got": got, "want": want, "ok": got == want}


def run(spark: SparkSession, log: SteadyLog, layout: str, run_dir: Path) -> dict[str, Any]:
    shutil.rmtree(run_dir, ignore_errors=True)
    source = run_dir / "source"
    link_segments(log.base(), source)
    config = load_config(write_config(run_dir / "job", [source], rolled_only=False))
    state = config.state.table
    create = LAYOUTS[layout]
    if create is not None:
        create(spark, state)
    clock = ManualClock(NOW_MS)
    with Stopwatch() as base:
        Compactor(spark, config, clock).run_once()
    base_version = DeltaTable.forPath(spark, state).history(1).first()["version"]  # type: ignore[index]

    for i in range(log.batches):
        link_segments(log.update(i), source)
    steady = load_config(
        write_config(
            run_dir / "job", [source], rolled_only=False, stream={"max_segments_per_batch": 1}
        )
    )
    phases = Phases()
    progress = QueryProgress()
    compactor = Compactor(spark, steady, clock)
    phases.wrap(compactor.merger, "process", "merge")
    phases.wrap(compactor.merger, "_merge_state", "state MERGE")
    phases.wrap(compactor.materializer, "run", "materialise")
    spark.streams.addListener(progress)
    try:
        with Stopwatch() as watch:
            compactor.run_once()
        progress.done.wait(10)  # listener events arrive asynchronously
    finally:
        spark.streams.removeListener(progress)
    batches = [d for d in progress.durations if d.get("addBatch", 0) > 0]
    return {
        "layout": layout,
        "keys": log.keys,
        "base_seconds": base.seconds,
        "base_cpu_seconds": base.cpu_seconds,
        "steady_seconds": watch.seconds,
        "steady_cpu_seconds": watch.cpu_seconds,
        "batch_ms": [d["triggerExecution"] for d in batches],
        "merge_s": [end - start for start, end in phases.calls["merge"]],
        "state_merge_s": [end - start for start, end in phases.calls["state MERGE"]],
        "merges": merge_metrics(spark, state, base_version),
        "check": check(spark, state, log),
    }


# --- Reporting -------------------------------------------------------------------------------


def summary(r: dict[str, Any]) -> dict[str, float]:
    out = {
        "batches": len(r["batch_ms"]),
        "batch_median_s": statistics.median(r["batch_ms"]) / 1000 if r["batch_ms"] else 0.0,
        "batch_max_s": max(r["batch_ms"], default=0) / 1000,
        "state_merge_median_s": statistics.median(r["state_merge_s"]) if r["state_merge_s"] else 0,
    }
    for k in MERGE_METRICS:
        values = [m[k] for m in r["merges"]]
        out[f"median {k}"] = statistics.median(values) if values else 0
    return out


def report(out: dict[str, Any]) -> None:
    print(f"\nsteady state, {os.cpu_count()} cores")
    for log in out["logs"]:
        print(
            f"  log: {log['keys']:,} keys in {log['partitions']} partitions "
            f"({log['base_bytes'] / 2**20:,.0f} MiB), {log['batches']} update segments of "
            f"{log['updates']:,} records ({log['update_bytes'] / 2**20:,.1f} MiB in all)"
            + (" (cached)" if log["cached"] else f", generated in {log['generate_seconds']:.0f} s")
        )
    for r in out["runs"]:
        s = r["summary"]
        verdict = "OK" if r["check"]["ok"] else f"WRONG {r['check']}"
        print(
            f"\n  {r['layout']}, {r['keys']:,} keys: base {r['base_seconds']:.1f} s "
            f"({r['base_cpu_seconds'] or 0:.0f} CPU s); {s['batches']} batches in "
            f"{r['steady_seconds']:.1f} s ({r['steady_cpu_seconds'] or 0:.0f} CPU s), median "
            f"{s['batch_median_s']:.2f} s, max {s['batch_max_s']:.2f} s, state MERGE median "
            f"{s['state_merge_median_s']:.2f} s; state {verdict}"
        )
        print(
            "    MERGE medians: "
            + ", ".join(
                f"{k.removeprefix('median ')} {v:,.0f}"
                for k, v in s.items()
                if k.startswith("median")
            )
        )
    for layout, ratio in out["ratios"].items():
        print(
            f"\n  {layout}: median batch at the most keys / the fewest: {ratio:.2f}x (target 1.3x)"
        )


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> dict[str, Any]:
    parser = options.parser("steady", __doc__)
    parser.add_argument("--keys", type=int, action="append", help="(1000000 and 10000000)")
    parser.add_argument("--partitions", type=int, default=8, help="(8)")
    parser.add_argument("--batches", type=int, default=20, help="update segments (20)")
    parser.add_argument("--updates", type=int, default=20_000, help="records per update (20000)")
    parser.add_argument("--layout", choices=sorted(LAYOUTS), action="append", help="(all of them)")
    parser.add_argument("--seed", type=int, default=42)
    options.add_workdir(
        parser,
        "steady",
        "generated logs are cached here; tables and checkpoints go to <workdir>/run",
    )
    parser.add_argument(
        "--driver-memory", default="6g", help="for a session this starts (default 6g)"
    )
    args = parser.parse_args(argv)
    keys = sorted(args.keys or [1_000_000, 10_000_000])
    layouts = args.layout or list(LAYOUTS)

    args.workdir.mkdir(parents=True, exist_ok=True)
    logs = [
        generate(args.workdir, k, args.partitions, args.batches, args.updates, args.seed)
        for k in keys
    ]
    if spark is None:
        spark = get_spark(
            app_name="segcompact-steady", conf={"spark.driver.memory": args.driver_memory}
        )
    runs = []
    for layout in layouts:
        for log in logs:
            r = run(spark, log, layout, args.workdir / "run" / f"{layout}-{log.keys}")
            r["summary"] = summary(r)
            runs.append(r)
    out: dict[str, Any] = {
        "logs": [asdict(log) for log in logs],
        "runs": runs,
        "ratios": {},
    }
    for layout in layouts:
        mine = [r for r in runs if r["layout"] == layout]
        low, high = mine[0]["summary"], mine[-1]["summary"]
        if len(mine) > 1 and low["batch_median_s"]:
            out["ratios"][layout] = high["batch_median_s"] / low["batch_median_s"]
    report(out)
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
