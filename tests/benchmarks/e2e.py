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
- plain: what users write today. ``spark.read.format("binaryFile")`` over the ``.log`` files,
  ``mapInArrow`` decoding each file with kafka-python's ``MemoryRecords`` into rows (topic,
  partition, key, value, offset, timestamp, timestampType, headers), null keys dropped, the
  highest offset per (topic, partition, key) kept with ``max_by`` (as segcompact does), and ONE
  Delta MERGE into a fresh table: update when the source offset is higher, insert when not
  matched; tombstones stay as rows with a ``tombstone`` flag, as segcompact keeps them until
  their delete horizon. As users write it, it does not check CRCs (segcompact does).

Both timings start before their tables are created and stop when the last write returns.
Records/s counts every input record; MB/s is input file bytes (MB = 10^6 bytes) per wall
second. CPU seconds are summed over this process and its descendants (the JVM and the Python
workers), read from /proc: steadier than wall time on a machine shared with other work.

Then both state tables are compared in full on (topic, partition, key, offset, tombstone, hash
of the value), and each against the generator's sample; a difference is a warning here and a
failure in the smoke test. With ``--profile`` (the default) segcompact's run is broken into
phases (table setup, the foreachBatch's partition-stats pass, state MERGE, partitions MERGE,
tombstone expiry, streaming overhead), and each method's decoding alone is timed through a
``noop`` sink. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StreamingQueryListener

from segcompact.config import CompactorConfig, load_config
from segcompact.spark.job import Compactor
from segcompact.spark.session import get_spark
from segcompact.spark.source import NAME, register
from tests.support.config import write_config
from tests.support.keyed_log import Log, MiB, generate, log_files

# --- Measuring -------------------------------------------------------------------------------


def tree_cpu_seconds() -> float | None:
    """CPU seconds of this process and all its descendants (the JVM, Python workers), or None
    where /proc is missing. Reaped children count through their parent's cutime and cstime."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        stats: dict[int, tuple[int, float]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    text = f.read()
            except OSError:
                continue  # gone meanwhile
            rest = text[text.rindex(")") + 2 :].split()
            ticks = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
            stats[int(entry.name)] = (int(rest[1]), ticks / tick)
    except (OSError, ValueError):
        return None
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _) in stats.items():
        children[ppid].append(pid)
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(children.get(pid, ()))
    return total


class Stopwatch:
    """Wall and CPU seconds (process tree) and load average over a ``with`` block."""

    def __enter__(self) -> Stopwatch:
        self.load_before = os.getloadavg()[0]
        self.cpu0 = tree_cpu_seconds()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.t0
        cpu1 = tree_cpu_seconds()
        self.cpu_seconds = None if cpu1 is None or self.cpu0 is None else cpu1 - self.cpu0
        self.load_after = os.getloadavg()[0]


@dataclass(slots=True)
class Result:
    name: str
    seconds: float  # wall clock, one run
    cpu_seconds: float | None  # process tree
    records: int  # input records
    file_bytes: int  # input .log bytes
    state_rows: int
    tombstone_rows: int
    load_before: float  # 1-minute load average at the start and the end
    load_after: float
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.file_bytes / self.seconds / 1e6

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "records_per_s": self.records_per_s, "mb_per_s": self.mb_per_s}


class Phases:
    """The (start, end) of every call to chosen methods of some objects (``perf_counter``)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[float, float]]] = defaultdict(list)

    def wrap(self, obj: object, method: str, label: str) -> None:
        inner = getattr(obj, method, None)
        if inner is None:  # renamed since: the profile loses a line, the run goes on
            print(f"  (profile: {type(obj).__name__}.{method} not found)")
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.calls[label].append((start, time.perf_counter()))

        setattr(obj, method, timed)

    def seconds(self, label: str, before: float = float("inf")) -> float:
        """Time in ``label``'s calls that ended before ``before``."""
        return sum(end - start for start, end in self.calls[label] if end <= before)


class _Progress(StreamingQueryListener):
    """Keeps each micro-batch's ``durationMs`` as the query reports it."""

    def __init__(self) -> None:
        self.durations: list[dict[str, int]] = []
        self.rows = 0
        self.done = threading.Event()

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        self.durations.append(dict(progress.durationMs))
        self.rows += progress.numInputRows

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.done.set()


def _count_state(spark: SparkSession, path: Path) -> tuple[int, int]:
    row = (
        spark.read.format("delta")
        .load(str(path))
        .agg(F.count(F.lit(1)).alias("n"), F.count(F.when(F.col("tombstone"), 1)).alias("t"))
        .first()
    )
    assert row is not None
    return int(row["n"]), int(row["t"])


# --- segcompact ------------------------------------------------------------------------------


def segcompact_config(log: Log, run_dir: Path) -> CompactorConfig:
    return load_config(write_config(run_dir / "segcompact", [log.root], rolled_only=False))


MATERIALISE_ALL = "materialise, all calls (no such step in plain)"


def run_segcompact(spark: SparkSession, log: Log, run_dir: Path) -> Result:
    config = segcompact_config(log, run_dir)
    phases = Phases()
    listener = _Progress()
    spark.streams.addListener(listener)
    try:
        with Stopwatch() as watch:
            t0 = time.perf_counter()
            compactor = Compactor(spark, config)
            setup = time.perf_counter() - t0
            merger = compactor.merger
            phases.wrap(merger, "process", "merge")
            phases.wrap(merger, "_partition_stats", "decode, reduce per key, partition stats")
            phases.wrap(merger, "_read_committed", "read committed")
            phases.wrap(merger, "_merge_state", "state MERGE")
            phases.wrap(merger, "_merge_partitions", "partitions MERGE")
            phases.wrap(merger, "expire", "expire")
            materializer = getattr(compactor, "materializer", None)
            if materializer is not None:
                phases.wrap(materializer, "run", "materialise")
            phases.wrap(compactor, "upkeep", "upkeep")
            compactor.run_once()
        listener.done.wait(10)  # listener events arrive asynchronously
        time.sleep(0.5)
    finally:
        spark.streams.removeListener(listener)
    upkeep_start = min((start for start, _ in phases.calls["upkeep"]), default=float("inf"))

    def before_upkeep(label: str) -> float:
        return phases.seconds(label, upkeep_start)

    merge = before_upkeep("merge")
    materialise = before_upkeep("materialise")
    parts = (
        "decode, reduce per key, partition stats",
        "read committed",
        "state MERGE",
        "partitions MERGE",
        "expire",
    )
    upkeep = phases.seconds("upkeep")
    breakdown = {
        "setup (create the tables)": setup,
        "micro-batch: merge (BatchMerger.process)": merge,
        "  rest of the merge": merge - sum(before_upkeep(p) for p in parts),
        **{f"  {p}": before_upkeep(p) for p in parts},
        "micro-batch: materialise due partitions": materialise,
        "upkeep after the query (expire, materialise)": upkeep,
        "rest (query start, planning, offsets, commit, stop)": watch.seconds
        - setup
        - merge
        - materialise
        - upkeep,
    }
    breakdown[MATERIALISE_ALL] = phases.seconds("materialise")
    for i, d in enumerate(listener.durations):
        for k, ms in sorted(d.items(), key=lambda kv: -kv[1]):
            if ms >= 100:
                breakdown[f"query progress, batch {i}: {k}"] = ms / 1000
    rows, tombstones = _count_state(spark, Path(config.state.table))
    return Result(
        "segcompact",
        watch.seconds,
        watch.cpu_seconds,
        log.records,
        log.file_bytes,
        rows,
        tombstones,
        watch.load_before,
        watch.load_after,
        breakdown,
    )


def segcompact_decode_only(spark: SparkSession, log: Log) -> DataFrame:
    """The ``kafka-segments`` source as a batch read: decoding alone."""
    register(spark)
    return spark.read.format(NAME).option("rolledOnly", "false").load(log.root)


# --- The plain pattern -----------------------------------------------------------------------

HEADERS = T.ArrayType(
    T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
)
DECODED = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.LongType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField("headers", HEADERS),
    ]
)
PLAIN_STATE = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("key", T.BinaryType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("headers", HEADERS),
        T.StructField("tombstone", T.BooleanType()),
    ]
)
_DECODED_ARROW = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("timestampType", pa.int32()),
        (
            "headers",
            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
        ),
    ]
)
_CHUNK_ROWS = 1 << 16


def decode_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: binaryFile rows (path, content) to one row per record."""
    from kafka.record.memory_records import MemoryRecords

    def chunk(topic: str, partition: int, cols: list[list[Any]]) -> pa.RecordBatch:
        n = len(cols[0])
        return pa.RecordBatch.from_arrays(
            [
                pa.array([topic] * n, pa.string()),
                pa.array([partition] * n, pa.int32()),
                *(pa.array(c, f.type) for c, f in zip(cols, list(_DECODED_ARROW)[2:], strict=True)),
            ],
            schema=_DECODED_ARROW,
        )

    for batch in batches:
        paths, contents = batch.column("path"), batch.column("content")
        for i in range(batch.num_rows):
            folder = paths[i].as_py().rstrip("/").rsplit("/", 2)[-2]
            topic, _, partition_text = folder.rpartition("-")
            partition = int(partition_text)
            records = MemoryRecords(contents[i].as_py())
            cols: list[list[Any]] = [[], [], [], [], [], []]
            key, value, offset, timestamp, ts_type, headers = cols
            while (b := records.next_batch()) is not None:
                if getattr(b, "is_control_batch", False):
                    continue
                kind = b.timestamp_type
                for r in b:
                    key.append(r.key)
                    value.append(r.value)
                    offset.append(r.offset)
                    timestamp.append(r.timestamp)
                    ts_type.append(kind)
                    headers.append(r.headers)
                if len(key) >= _CHUNK_ROWS:
                    yield chunk(topic, partition, cols)
                    cols = [[], [], [], [], [], []]
                    key, value, offset, timestamp, ts_type, headers = cols
            if key:
                yield chunk(topic, partition, cols)


def plain_decoded(spark: SparkSession, log: Log) -> DataFrame:
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.log")
        .option("recursiveFileLookup", "true")
        .load(log.root)
    )
    return files.select("path", "content").mapInArrow(decode_files, DECODED)


def run_plain(spark: SparkSession, log: Log, run_dir: Path) -> Result:
    path = str(run_dir / "plain" / "state")
    with Stopwatch() as watch:
        target = DeltaTable.create(spark).location(path).addColumns(PLAIN_STATE).execute()
        records = plain_decoded(spark, log).where(F.col("key").isNotNull())
        rest = [c for c in records.columns if c not in ("topic", "partition", "key")]
        latest = (
            records.groupBy("topic", "partition", "key")
            .agg(F.max_by(F.struct(*rest), F.col("offset")).alias("r"))
            .select("topic", "partition", "key", "r.*")
        )
        source = latest.select(
            "topic",
            "partition",
            "key",
            "offset",
            F.timestamp_millis("timestamp").alias("timestamp"),
            "timestampType",
            "value",
            "headers",
            F.col("value").isNull().alias("tombstone"),
        )
        (
            target.alias("t")
            .merge(
                source.alias("s"),
                "t.topic = s.topic AND t.partition = s.partition AND t.key = s.key",
            )
            .whenMatchedUpdateAll(condition="s.offset > t.offset")
            .whenNotMatchedInsertAll()
            .execute()
        )
    rows, tombstones = _count_state(spark, Path(path))
    return Result(
        "plain (binaryFile + kafka-python + MERGE)",
        watch.seconds,
        watch.cpu_seconds,
        log.records,
        log.file_bytes,
        rows,
        tombstones,
        watch.load_before,
        watch.load_after,
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
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.e2e",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--size-mib", type=float, default=1024, help="log size (default 1024)")
    parser.add_argument("--partitions", type=int, default=8, help="partitions (default 8)")
    parser.add_argument("--keys", type=int, default=1_000_000, help="distinct keys (1000000)")
    parser.add_argument("--segment-mib", type=float, default=128, help="segment size (128)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "segcompact-e2e",
        help="generated logs are cached here; tables and checkpoints go to <workdir>/run",
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
    parser.add_argument("--json", type=Path, help="also write the results to this file")
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
            "plain": noop_scan(plain_decoded(spark, log)),
        }
    ours = run_segcompact(spark, log, run_dir)
    plain = with_deadline(spark, args.plain_timeout_min, lambda: run_plain(spark, log, run_dir))
    out["results"] = {
        "segcompact": ours.to_dict(),
        "plain": None if plain is None else plain.to_dict(),
    }
    if plain is not None:
        out["ratio_records_per_s"] = ours.records_per_s / plain.records_per_s
        without = ours.seconds - ours.phases.get(MATERIALISE_ALL, 0.0)
        out["ratio_records_per_s_without_materialise"] = plain.seconds / without
        if ours.cpu_seconds and plain.cpu_seconds:
            out["ratio_cpu"] = plain.cpu_seconds / ours.cpu_seconds
        out["check"] = compare(spark, log, run_dir)
    out["load_average"] = os.getloadavg()
    report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))
    return out


if __name__ == "__main__":
    main()
