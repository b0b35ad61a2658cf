"""End to end: segcompact's compactor beside the plain Spark pattern, on the same Kafka log.

    python -m tests.benchmarks.e2e --size-mib 1024 --partitions 8 --keys 1000000 [--workdir D]

A log of at least ``--size-mib`` MiB is generated once and cached under ``--workdir`` (see
``tests/support/keyed_log.py``): one topic of ``--partitions`` partitions, segments rolled at
``--segment-mib``, ``--keys`` keys, most of them updated many times, 5% tombstones; the generator
keeps a sample of the expected state.

Then, in one Spark session, best of one (each run takes minutes at full size):

- segcompact: ``Compactor(spark, config).run_once()`` on fresh tables and checkpoint, with
  ``rolled_only = false`` (every segment is complete) and Kafka's default topic settings. This
  includes re-materialising every partition as compacted segments (all are due: the dirty
  ratio is 1), which the plain pattern does not do; a ratio without that step is printed too;
- plain: what users write today (``tests/benchmarks/plain.py``): ``binaryFile`` + kafka-python
  in ``mapInArrow`` + ``max_by`` + one Delta MERGE into a fresh table.

Both go through one timing path (:func:`timed_run`): the clock starts before their tables are
created and stops when the last write returns. Records/s counts every input record; MB/s is
input file bytes (MB = 10^6 bytes) per wall second. CPU seconds are summed over this process
and its descendants (the JVM and the Python workers), read from /proc: steadier than wall time
on a machine shared with other work (``tests/benchmarks/measure.py``).

Then both state tables are compared in full on (topic, partition, key, offset, tombstone, hash
of the value), and each against the generator's sample; a difference is a warning here and a
failure in the smoke test. With ``--profile`` (the default) segcompact's run is broken into
phases (table setup, the foreachBatch's partition-stats pass, state MERGE, partitions MERGE,
tombstone expiry, streaming overhead), and each method's decoding alone is timed through a
``noop`` sink. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.config import CompactorConfig, load_config
from segcompact.spark.job import Compactor
from segcompact.spark.session import get_spark
from segcompact.spark.source import NAME, register
from tests.benchmarks import options, plain
from tests.benchmarks.measure import Phases, QueryProgress, Result, Stopwatch
from tests.support.config import write_config
from tests.support.keyed_log import Log, MiB, generate, log_files

# --- One timing path -------------------------------------------------------------------------


def timed_run(spark: SparkSession, name: str, log: Log, run: Callable[[], Path]) -> Result:
    """Time ``run()``, which builds a state table from ``log`` and returns its path, then count
    the table's rows (outside the clock)."""
    with Stopwatch() as watch:
        state = run()
    row = (
        spark.read.format("delta")
        .load(str(state))
        .agg(F.count(F.lit(1)).alias("n"), F.count(F.when(F.col("tombstone"), 1)).alias("t"))
        .first()
    )
    assert row is not None
    return Result(
        name=name,
        seconds=watch.seconds,
        cpu_seconds=watch.cpu_seconds,
        records=log.records,
        file_bytes=log.file_bytes,
        state_rows=int(row["n"]),
        tombstone_rows=int(row["t"]),
        load_before=watch.load_before,
        load_after=watch.load_after,
    )


# --- segcompact ------------------------------------------------------------------------------


def segcompact_config(log: Log, run_dir: Path) -> CompactorConfig:
    return load_config(write_config(run_dir / "segcompact", [log.root], rolled_only=False))


SETUP = "setup (create the tables)"
MERGE_PARTS = (
    "decode, reduce per key, partition stats",
    "read committed",
    "state MERGE",
    "partitions MERGE",
    "expire",
)
MATERIALISE_ALL = "materialise, all calls (no such step in plain)"


def _profiled(compactor: Compactor, phases: Phases) -> None:
    merger = compactor.merger
    phases.wrap(merger, "process", "merge")
    for method, label in zip(
        ("_partition_stats", "_read_committed", "_merge_state", "_merge_partitions", "expire"),
        MERGE_PARTS,
        strict=True,
    ):
        phases.wrap(merger, method, label)
    materializer = getattr(compactor, "materializer", None)
    if materializer is not None:
        phases.wrap(materializer, "run", "materialise")
    phases.wrap(compactor, "upkeep", "upkeep")


def _breakdown(phases: Phases, progress: QueryProgress, seconds: float) -> dict[str, float]:
    """Where segcompact's ``seconds`` went; the upkeep after the query is its own line."""
    upkeep_start = min((start for start, _ in phases.calls["upkeep"]), default=float("inf"))

    def before_upkeep(label: str) -> float:
        return phases.seconds(label, upkeep_start)

    setup = phases.seconds(SETUP)
    merge = before_upkeep("merge")
    materialise = before_upkeep("materialise")
    upkeep = phases.seconds("upkeep")
    breakdown = {
        SETUP: setup,
        "micro-batch: merge (BatchMerger.process)": merge,
        "  rest of the merge": merge - sum(before_upkeep(p) for p in MERGE_PARTS),
        **{f"  {p}": before_upkeep(p) for p in MERGE_PARTS},
        "micro-batch: materialise due partitions": materialise,
        "upkeep after the query (expire, materialise)": upkeep,
        "rest (query start, planning, offsets, commit, stop)": seconds
        - setup
        - merge
        - materialise
        - upkeep,
        MATERIALISE_ALL: phases.seconds("materialise"),
    }
    for i, d in enumerate(progress.durations):
        for k, ms in sorted(d.items(), key=lambda kv: -kv[1]):
            if ms >= 100:
                breakdown[f"query progress, batch {i}: {k}"] = ms / 1000
    return breakdown


def run_segcompact(spark: SparkSession, log: Log, run_dir: Path) -> Result:
    config = segcompact_config(log, run_dir)
    phases = Phases()
    progress = QueryProgress()

    def compact() -> Path:
        began = time.perf_counter()
        compactor = Compactor(spark, config)
        phases.calls[SETUP].append((began, time.perf_counter()))
        _profiled(compactor, phases)
        compactor.run_once()
        return Path(config.state.table)

    spark.streams.addListener(progress)
    try:
        result = timed_run(spark, "segcompact", log, compact)
        progress.done.wait(10)  # listener events arrive asynchronously
        time.sleep(0.5)
    finally:
        spark.streams.removeListener(progress)
    result.phases = _breakdown(phases, progress, result.seconds)
    return result


def segcompact_decode_only(spark: SparkSession, log: Log) -> DataFrame:
    """The ``kafka-segments`` source as a batch read: decoding alone."""
    register(spark)
    return spark.read.format(NAME).option("rolledOnly", "false").load(log.root)


# --- The plain pattern -----------------------------------------------------------------------


def run_plain(spark: SparkSession, log: Log, run_dir: Path) -> Result:
    return timed_run(
        spark,
        "plain (binaryFile + kafka-python + MERGE)",
        log,
        lambda: plain.write_state(spark, log, run_dir / "plain" / "state"),
    )


# --- Checking --------------------------------------------------------------------------------


def compare(spark: SparkSession, log: Log, run_dir: Path) -> dict[str, Any]:
    """Both state tables in full, and each against the generator's sample."""

    def table(path: Path) -> DataFrame:
        return (
            spark.read.format("delta")
            .load(str(path))
            .select(
                "topic",
                "partition",
                "key",
                "offset",
                "tombstone",
                F.xxhash64("value").alias("value_hash"),
            )
        )

    ours = table(Path(segcompact_config(log, run_dir).state.table))
    plain = table(run_dir / "plain" / "state")
    only_ours = ours.exceptAll(plain)
    only_plain = plain.exceptAll(ours)
    expected = spark.createDataFrame(
        [(log.topic, p, k.encode("latin-1"), o, t) for p, k, o, t in log.sample],
        "topic string, partition int, key binary, offset long, tombstone boolean",
    )

    def misses(df: DataFrame) -> int:
        return expected.exceptAll(df.select(*expected.columns)).count()

    out: dict[str, Any] = {
        "expected_keys": log.keys,
        "segcompact_rows": ours.count(),
        "plain_rows": plain.count(),
        "only_segcompact": only_ours.count(),
        "only_plain": only_plain.count(),
        "sample_keys": len(log.sample),
        "sample_misses_segcompact": misses(ours),
        "sample_misses_plain": misses(plain),
    }
    out["examples"] = [
        {"in": which, **{k: (v.hex() if isinstance(v, bytes | bytearray) else v) for k, v in r}}
        for which, df in (("segcompact only", only_ours), ("plain only", only_plain))
        for r in (row.asDict().items() for row in df.limit(3).collect())
    ]
    out["ok"] = (
        out["segcompact_rows"] == out["plain_rows"] == log.keys
        and out["only_segcompact"] == out["only_plain"] == 0
        and out["sample_misses_segcompact"] == out["sample_misses_plain"] == 0
    )
    return out


# --- Driving ---------------------------------------------------------------------------------


def noop_scan(df: DataFrame) -> dict[str, float | None]:
    with Stopwatch() as watch:
        df.write.format("noop").mode("overwrite").save()
    return {"seconds": watch.seconds, "cpu_seconds": watch.cpu_seconds}


def warm_up(spark: SparkSession, directory: Path) -> None:
    """A tiny Delta create + MERGE, so that neither timed run pays the first one alone."""
    path = str(directory / "warm-up")
    schema = T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.LongType())])
    target = DeltaTable.create(spark).location(path).addColumns(schema).execute()
    source = spark.range(100).select(F.col("id").alias("k"), F.col("id").alias("v"))
    (
        target.alias("t")
        .merge(source.alias("s"), "t.k = s.k")
        .whenMatchedUpdateAll(condition="s.v > t.v")
        .whenNotMatchedInsertAll()
        .execute()
    )


def with_deadline(spark: SparkSession, minutes: float, run: Callable[[], Result]) -> Result | None:
    """``run()``, or None after cancelling every Spark job once ``minutes`` have passed."""
    fired = threading.Event()

    def cancel() -> None:
        fired.set()
        spark.sparkContext.cancelAllJobs()

    timer = threading.Timer(minutes * 60, cancel)
    timer.start()
    try:
        return run()
    except Exception:
        if fired.is_set():
            return None
        raise
    finally:
        timer.cancel()


def report(out: dict[str, Any]) -> None:
    log = out["log"]
    print(
        f"\nlog: {log['file_bytes'] / MiB:,.1f} MiB in {log['segments']} segments of "
        f"{log['partitions']} partitions; {log['records']:,} records "
        f"({log['tombstones']:,} tombstones), {log['keys']:,} keys; "
        f"{log['fresh_records']:,} records encoded, the rest repeated batches; "
        f"generated in {log['generate_seconds']:.1f} s" + (" (cached)" if log["cached"] else "")
    )
    print(
        f"\n  {'method':<44} {'records/s':>11} {'MB/s':>7} {'wall s':>8} {'cpu s':>8} "
        f"{'state rows':>11} {'load':>11}"
    )
    for r in out["results"].values():
        if r is None:
            continue
        cpu = "-" if r["cpu_seconds"] is None else f"{r['cpu_seconds']:.1f}"
        print(
            f"  {r['name']:<44} {r['records_per_s'] / 1e6:>9.3f} M {r['mb_per_s']:>7.2f} "
            f"{r['seconds']:>8.1f} {cpu:>8} {r['state_rows']:>11,} "
            f"{r['load_before']:>5.2f}-{r['load_after']:<5.2f}"
        )
    if out.get("ratio_records_per_s") is not None:
        line = f"\n  segcompact / plain, records/s: {out['ratio_records_per_s']:.2f}x"
        if out.get("ratio_cpu") is not None:
            line += f" (CPU time: {out['ratio_cpu']:.2f}x)"
        line += (
            f"; without segcompact's materialisation: "
            f"{out['ratio_records_per_s_without_materialise']:.2f}x"
        )
        print(line)
    else:
        print(f"\n  plain did not finish within {out['plain_timeout_min']} min")
    check = out.get("check")
    if check:
        verdict = "OK" if check["ok"] else "WARNING: the state tables differ"
        print(
            f"  check: {verdict}: rows {check['segcompact_rows']:,} / {check['plain_rows']:,} "
            f"(expected {check['expected_keys']:,}); only in segcompact "
            f"{check['only_segcompact']}, only in plain {check['only_plain']}; sample of "
            f"{check['sample_keys']} keys: misses {check['sample_misses_segcompact']} / "
            f"{check['sample_misses_plain']}"
        )
        for e in check["examples"]:
            print(f"    {e}")
    phases = out["results"]["segcompact"]["phases"]
    if phases:
        print("\n  segcompact phases (wall s; indented: part of the line above):")
        for name, s in phases.items():
            print(f"    {name:<58} {s:>8.1f}")
    for name, scan in out.get("decode_only", {}).items():
        cpu = "-" if scan["cpu_seconds"] is None else f"{scan['cpu_seconds']:.1f}"
        print(
            f"  decode only, {name:<16} (noop sink): {scan['seconds']:>7.1f} s wall, {cpu} s CPU, "
            f"{log['records'] / scan['seconds'] / 1e6:.3f} M records/s"
        )
    print(f"  load average: {' '.join(f'{x:.2f}' for x in out['load_average'])} (1/5/15 min)")


def main(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> dict[str, Any]:
    parser = options.parser("e2e", __doc__)
    parser.add_argument("--size-mib", type=float, default=1024, help="log size (default 1024)")
    parser.add_argument("--partitions", type=int, default=8, help="partitions (default 8)")
    parser.add_argument("--keys", type=int, default=1_000_000, help="distinct keys (1000000)")
    parser.add_argument("--segment-mib", type=float, default=128, help="segment size (128)")
    parser.add_argument("--seed", type=int, default=42)
    options.add_workdir(
        parser, "e2e", "generated logs are cached here; tables and checkpoints go to <workdir>/run"
    )
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time each method's decoding alone through a noop sink (default on)",
    )
    parser.add_argument(
        "--plain-timeout-min",
        type=float,
        default=25,
        help="cancel the plain run after this many minutes (default 25)",
    )
    parser.add_argument(
        "--driver-memory", default="4g", help="for a session this starts (default 4g)"
    )
    args = parser.parse_args(argv)

    args.workdir.mkdir(parents=True, exist_ok=True)
    log = generate(
        args.workdir, args.size_mib, args.partitions, args.keys, args.segment_mib, args.seed
    )
    if spark is None:
        spark = get_spark(
            app_name="segcompact-e2e", conf={"spark.driver.memory": args.driver_memory}
        )
    run_dir = args.workdir / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir()
    print(
        f"e2e benchmark: Spark {spark.version}, {spark.sparkContext.master} on "
        f"{os.cpu_count()} cores, shuffle partitions "
        f"{spark.conf.get('spark.sql.shuffle.partitions')}, log in {log.root}"
    )
    for path in log_files(log):  # warm the page cache: both methods start from it
        path.read_bytes()
    warm_up(spark, run_dir)

    out: dict[str, Any] = {
        "log": {k: v for k, v in asdict(log).items() if k != "sample"},
        "plain_timeout_min": args.plain_timeout_min,
    }
    if args.profile:
        out["decode_only"] = {
            "segcompact": noop_scan(segcompact_decode_only(spark, log)),
            "plain": noop_scan(plain.decoded(spark, log)),
        }
    ours = run_segcompact(spark, log, run_dir)
    theirs = with_deadline(spark, args.plain_timeout_min, lambda: run_plain(spark, log, run_dir))
    out["results"] = {
        "segcompact": ours.to_dict(),
        "plain": None if theirs is None else theirs.to_dict(),
    }
    if theirs is not None:
        out["ratio_records_per_s"] = ours.records_per_s / theirs.records_per_s
        without = ours.seconds - ours.phases.get(MATERIALISE_ALL, 0.0)
        out["ratio_records_per_s_without_materialise"] = theirs.seconds / without
        if ours.cpu_seconds and theirs.cpu_seconds:
            out["ratio_cpu"] = theirs.cpu_seconds / ours.cpu_seconds
        out["check"] = compare(spark, log, run_dir)
    out["load_average"] = os.getloadavg()
    report(out)
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
