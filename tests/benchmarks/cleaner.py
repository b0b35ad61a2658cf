"""Kafka's own log cleaner beside segcompact ``run --once``, on one broker-written log.

    python -m tests.benchmarks.cleaner [--size-mib 256] [--partitions 2]
        [--keys-per-partition 200000] [--tombstones 0.1] [--repeat 3] [--workdir D]

1. A real broker (Kafka 4.3, KRaft, 127.0.0.1; the JIT a production broker runs with, 1 GiB
   heap, one cleaner thread, the default 128 MiB dedupe buffer) hosts one compacted topic of
   ``--partitions`` partitions rolling every ``--segment-mib`` (``internal.segment.bytes``).
   confluent-kafka produces keyed lz4 records to it (16 KiB batches before compression, as
   Java's producer cuts them) until the rolled segments hold ``--size-mib`` MiB: JSON-like
   values of 100-200 bytes (``tests/support/keyed_log.py``'s), keys drawn at random among
   ``--keys-per-partition`` per partition, a ``--tombstones`` share of null values. The cleaner
   waits meanwhile: ``min.cleanable.dirty.ratio`` is 1.0 (Kafka cleans above it, and an
   uncleaned log's ratio is exactly 1.0) and ``min.compaction.lag.ms`` is ten years.
2. Every partition directory is copied aside: segcompact's input, byte for byte what the
   cleaner is about to clean (rolled segments: both leave the active one alone).
3. The topic is altered to Kafka's defaults (ratio 0.5, lag 0) and the cleaner cleans every
   partition once. Its own figures come from the stats block it logs per partition ("Log
   cleaner thread 0 cleaned log ...": MB processed in seconds, the indexing and cleaning
   passes; ``log-cleaner.log`` in a Kafka install, the broker's one log here); beside them,
   read from /proc, the CPU time of the cleaner thread and of the whole broker JVM from the
   alter to the last stats block (an idle broker's background included).
4. segcompact's command line, as a new user runs it (``segcompact run --once --config F``,
   Spark's defaults, fresh tables, checkpoint and output), in a subprocess: on an empty source
   (the fixed cost: JVM start, Delta tables, one empty micro-batch) and on the copy, in turn,
   ``--repeat`` times each (3), the run of median CPU time of each counting (one run of
   segcompact on the copy moves by a few CPU seconds from the next).
   Its config keeps Kafka's topic defaults, as the cleaner's topic does (offset order; a
   tombstone outlives its first compaction by a day, so both keep them here), but for the
   segment size, which is the topic's; it reads rolled segments only (``rolled_only``), as the
   cleaner never cleans the active one.
   Its CPU time is the whole process tree's: the CLI runs under a child subreaper
   (:func:`reap`), because the Python driver exits without waiting for its Spark JVM, which
   would otherwise be reparented away and its time lost. The marginal cost is the run on the
   copy minus the empty one.

Results: MB (10^6 bytes) of input per CPU second for the cleaner thread (its own figures and
/proc's), for the broker JVM while cleaning, for segcompact's whole process tree and for its
marginal cost, and segcompact's figure over the cleaner's. Then both outputs are compared
record for record (offset, timestamp, key, value, headers) by :func:`compare`: segcompact's
published segments against the cleaner's cleaned ones. A difference is a warning here and a
failure in the smoke test; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from segcompact.format.logdir import parse_segment_file
from tests.benchmarks import options
from tests.benchmarks.measure import run_once
from tests.interop.compacted import (
    Rec,
    alter_topic_config,
    cleaner_checkpoint,
    copy_partition,
    data_records,
    segment_logs,
)
from tests.support.config import write_config
from tests.support.jvm import kafka_version
from tests.support.kafka_broker import KafkaBroker
from tests.support.keyed_log import MiB, key_bytes, value_bytes
from tests.support.producing import TIMEOUT_S, PartitionProducer

TOPIC = "cleaner-bench"
BATCH_BYTES = 16 << 10  # librdkafka's batch.size: Java's producer default
HOLD_MS = 10 * 365 * 24 * 3600 * 1000  # min.compaction.lag.ms while producing
# Linux cuts a thread's name to 15 bytes: "kafka-log-cleaner-thread-0" reads as this.
CLEANER_THREAD = "kafka-log-clean"
POLL_S = 0.05

# --- The broker's figures --------------------------------------------------------------------


def _stat_cpu_seconds(stat_path: str) -> float:
    """utime + stime of a /proc ``stat`` file, in seconds."""
    with open(stat_path) as f:
        text = f.read()
    rest = text[text.rindex(")") + 2 :].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds of every thread of a running process."""
    return _stat_cpu_seconds(f"/proc/{pid}/stat")


def thread_cpu_seconds(pid: int, name: str) -> float | None:
    """CPU seconds of the process's threads named ``name`` (None when there is none)."""
    total, found = 0.0, False
    for task in os.scandir(f"/proc/{pid}/task"):
        try:
            with open(f"{task.path}/comm") as f:
                if f.read().strip() != name:
                    continue
            total += _stat_cpu_seconds(f"{task.path}/stat")
            found = True
        except OSError:
            continue  # the thread ended meanwhile
    return total if found else None


@dataclass(frozen=True, slots=True)
class CleanerStats:
    """One stats block the cleaner logs when it has cleaned a log (``CleanerThread.recordStats``
    in Kafka's storage module). MB there is MiB; seconds have one decimal."""

    thread: int
    log: str  # <topic>-<partition>
    dirty_start: int
    dirty_end: int  # the first offset it did not clean: the active segment's base
    processed_mib: float  # bytes read by the cleaning pass
    seconds: float  # the whole cleaning, indexing included (wall clock, one thread)
    mib_per_s: float  # its own rate; Infinity when the seconds round to 0
    indexed_mib: float  # bytes read to build the offset map
    index_seconds: float
    buffer_utilization_pct: float
    clean_seconds: float
    start_mib: float
    start_messages: int
    end_mib: float
    end_messages: int


_NUMBER = r"[\d,]+(?:\.\d+)?|Infinity|NaN"


def _n(name: str) -> str:
    return rf"(?P<{name}>{_NUMBER})"


_STATS = re.compile(
    r"Log cleaner thread (?P<thread>\d+) cleaned log (?P<log>\S+) "
    r"\(dirty section = \[(?P<dirty_start>\d+), (?P<dirty_end>\d+)\]\)\s+"
    rf"{_n('processed_mib')} MB of log processed in {_n('seconds')} seconds "
    rf"\({_n('mib_per_s')} MB/sec\)\.\s+"
    rf"Indexed {_n('indexed_mib')} MB in {_n('index_seconds')} seconds .*?\s+"
    rf"Buffer utilization: {_n('buffer_utilization_pct')}%\s+"
    rf"Cleaned [\d,.]+ MB in {_n('clean_seconds')} seconds .*?\s+"
    rf"Start size: {_n('start_mib')} MB \({_n('start_messages')} messages\)\s+"
    rf"End size: {_n('end_mib')} MB \({_n('end_messages')} messages\)"
)


_CAST: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str}


def parse_cleaner_stats(text: str) -> list[CleanerStats]:
    """Every stats block in a broker's log, in order."""
    out = []
    for m in _STATS.finditer(text):
        # Java's %,.1f and %,d group thousands with commas.
        found = {k: x.replace(",", "") for k, x in m.groupdict().items()}
        out.append(
            CleanerStats(
                **{f.name: _CAST[str(f.type)](found[f.name]) for f in fields(CleanerStats)}
            )
        )
    return out


# --- Kafka: produce, copy aside, clean -------------------------------------------------------


def rolled_logs(directory: Path) -> list[Path]:
    """A partition's segments but the active one."""
    return segment_logs(directory)[:-1]


def producer_settings() -> dict[str, Any]:
    """Throughput rather than reproducible batches (``tests/support/producing.py``'s aim):
    Java's producer defaults, lz4, several requests in flight."""
    return {
        "acks": "all",
        "compression.type": "lz4",
        "linger.ms": 5,
        "batch.size": BATCH_BYTES,
        "message.timeout.ms": TIMEOUT_S * 1000,
    }


def produce(
    broker: KafkaBroker,
    partitions: int,
    keys_per_partition: int,
    tombstone_share: float,
    target_bytes: int,
    seed: int,
) -> dict[str, Any]:
    """Keyed records until the partitions' rolled segments hold ``target_bytes``; key ``k``
    goes to partition ``k mod partitions``, as a producer's partitioner keeps a key in one."""
    rng = random.Random(seed)
    producers = [
        PartitionProducer(broker, TOPIC, producer_settings(), partition=p)
        for p in range(partitions)
    ]
    directories = [broker.partition_dir(TOPIC, p) for p in range(partitions)]
    keys = keys_per_partition * partitions
    records = tombstones = 0
    rolled = 0
    step = 2000  # records between two looks at the log's size
    while rolled < target_bytes:
        for _ in range(step):
            k = rng.randrange(keys)
            value = None if rng.random() < tombstone_share else value_bytes(rng, k)
            producers[k % partitions].send(key_bytes(k), value, timestamp=0)  # stamped now
            tombstones += value is None
        records += step
        for producer in producers:
            producer.flush()
        logs = [segment_logs(d) for d in directories]
        rolled = sum(p.stat().st_size for d in logs for p in d[:-1])
        written = sum(p.stat().st_size for d in logs for p in d)
        # Aim at the target from the bytes a record takes so far.
        step = int(min(50_000, max(500, (target_bytes - rolled) * records // max(written, 1))))
    return {"records": records, "tombstones": tombstones}


def wait_for_cleaning(
    broker: KafkaBroker, since: int, active_base: dict[str, int], timeout_s: float
) -> list[CleanerStats]:
    """The cleaner's stats blocks logged after byte ``since`` of the broker's log, once every
    partition (``<topic>-<p>``) is cleaned up to its active segment."""
    deadline = time.monotonic() + timeout_s
    while True:
        with open(broker.log_file, "rb") as f:
            f.seek(since)
            text = f.read().decode("utf-8", errors="replace")
        stats = [s for s in parse_cleaner_stats(text) if s.log in active_base]
        reached = {s.log: s.dirty_end for s in stats}
        if all(reached.get(log) == base for log, base in active_base.items()):
            return stats
        if not broker.is_running():
            raise AssertionError(f"the broker exited while cleaning; see {broker.log_file}")
        if time.monotonic() > deadline:
            raise AssertionError(
                f"Kafka's cleaner did not clean every partition within {timeout_s:.0f} s: "
                f"reached {reached}, want {active_base}; see {broker.log_file}"
            )
        time.sleep(POLL_S)


@dataclass(slots=True)
class KafkaRun:
    raw: Path  # <raw>/<topic>-<p>: the partitions as produced (segcompact's input)
    cleaned: Path  # the broker's log dir after cleaning, stopped
    active_base: dict[str, int]  # <topic>-<p>: base offset of the active segment
    out: dict[str, Any]


def run_kafka(args: argparse.Namespace, work: Path, segment_bytes: int) -> KafkaRun:
    properties = {"log.cleaner.threads": 1, "log.cleaner.backoff.ms": 100}
    broker = KafkaBroker(work / "broker", properties=properties, heap="1g", fast_start=False)
    raw = work / "raw"
    jvm: dict[str, Any] = {}
    with broker:
        pid = broker.pid
        jvm["startup_cpu_s"] = process_cpu_seconds(pid)
        jvm["startup_wall_s"] = broker.startup_seconds
        broker.create_topic(
            TOPIC,
            args.partitions,
            config={
                "cleanup.policy": "compact",
                "internal.segment.bytes": segment_bytes,
                "min.cleanable.dirty.ratio": "1.0",
                "min.compaction.lag.ms": HOLD_MS,
            },
        )
        print(f"  broker up in {broker.startup_seconds:.1f} s; producing {TOPIC}")
        began, cpu0 = time.perf_counter(), process_cpu_seconds(pid)
        produced = produce(
            broker,
            args.partitions,
            args.keys_per_partition,
            args.tombstones,
            int(args.size_mib * MiB),
            args.seed,
        )
        jvm["produce_cpu_s"] = process_cpu_seconds(pid) - cpu0
        produced["produce_wall_s"] = time.perf_counter() - began

        # Copied while the broker runs: every record is acknowledged and nothing more comes;
        # rolled segments do not change, and the active one is read by neither side.
        active_base: dict[str, int] = {}
        for p in range(args.partitions):
            src = broker.partition_dir(TOPIC, p)
            copy_partition(src, raw / src.name)
            active_base[src.name] = parse_segment_file(str(segment_logs(src)[-1]))[0]
        since = broker.log_file.stat().st_size
        if parse_cleaner_stats(broker.log_file.read_text(errors="replace")) or any(
            t == TOPIC for t, _ in cleaner_checkpoint(broker.log_dir)
        ):
            raise AssertionError("Kafka's cleaner ran while producing: the copy is not raw")

        print(f"  produced {produced['records']:,} records; cleaning")
        cleaner, jvm_cleaning = clean(broker, TOPIC, since, active_base, args.clean_timeout_s)
    return KafkaRun(
        raw,
        broker.log_dir,
        active_base,
        {"produced": produced, "cleaner": cleaner, "jvm": {**jvm, **jvm_cleaning}},
    )


def clean(
    broker: KafkaBroker, topic: str, since: int, active_base: dict[str, int], timeout_s: float
) -> tuple[dict[str, Any], dict[str, float]]:
    """``topic`` altered to Kafka's defaults (ratio 0.5, lag 0), then its cleaner's work until
    every partition is cleaned up to its active segment: the cleaner's figures (its stats blocks
    logged after byte ``since`` of the broker's log and its thread's CPU seconds from /proc),
    and the broker JVM's CPU and wall seconds meanwhile."""
    pid = broker.pid
    began, cpu0 = time.perf_counter(), process_cpu_seconds(pid)
    thread0 = thread_cpu_seconds(pid, CLEANER_THREAD)
    alter_topic_config(
        broker, topic, {"min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0"}
    )
    stats = wait_for_cleaning(broker, since, active_base, timeout_s)
    jvm = {
        "cleaning_cpu_s": process_cpu_seconds(pid) - cpu0,
        "cleaning_wall_s": time.perf_counter() - began,
    }
    thread1 = thread_cpu_seconds(pid, CLEANER_THREAD)
    cleaner = {
        "stats": [asdict(s) for s in stats],
        "seconds": sum(s.seconds for s in stats),
        "index_seconds": sum(s.index_seconds for s in stats),
        "processed_bytes": round(sum(s.processed_mib for s in stats) * MiB),
        "thread_cpu_s": None if thread0 is None or thread1 is None else thread1 - thread0,
    }
    return cleaner, jvm


# --- segcompact's command line ---------------------------------------------------------------


def segcompact_config(
    work: Path, source: Path, segment_bytes: int, spark: dict[str, str] | None
) -> Path:
    """Kafka's topic defaults but the segment size, which is the topic's."""
    return write_config(work, [source], defaults={"segment.bytes": segment_bytes}, spark=spark)


def run_segcompact(
    args: argparse.Namespace, work: Path, raw: Path, segment_bytes: int
) -> dict[str, Any]:
    """``run --once`` on an empty source and on ``raw``, ``--repeat`` times each, alternating
    (each run its own tables), as a scheduled job runs them: per source, the run of median CPU
    time, with every run's (``cpu_s_runs``). First, a run on ``raw`` that writes the JVM's
    class archive the others map (none where ``--spark-conf-dir`` gives a configuration
    directory with files in it, which the JVM cannot archive: no first run then). Its output
    is ``<work>/full/out``, the median full run's."""
    spark_conf_dir = options.spark_conf_dir(args, work)
    spark = {"spark.driver.memory": args.driver_memory} if args.driver_memory else None
    empty = work / "empty-source"
    empty.mkdir(parents=True, exist_ok=True)
    plan = [("first", raw)] if not any(spark_conf_dir.iterdir()) else []
    plan += [run for _ in range(args.repeat) for run in (("empty", empty), ("full", raw))]
    runs: dict[str, list[dict[str, Any]]] = {}
    with options.own_cache(work):
        for i, (name, source) in enumerate(plan):
            folder = work / f"{name}-{i}"
            config = segcompact_config(folder, source, segment_bytes, spark)
            what = "an empty source" if source == empty else source
            print(f"  segcompact run --once on {what}{' (first run)' if name == 'first' else ''}")
            run = {**run_once(config, folder, spark_conf_dir), "folder": str(folder)}
            runs.setdefault(name, []).append(run)
    medians = {name: _median(done) for name, done in runs.items()}
    (work / "full").symlink_to(Path(medians["full"]["folder"]).name)  # beside it
    return medians


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median CPU time (the lower one of an even count), with every run's."""
    ordered = sorted(runs, key=lambda r: float(r["cpu_s"]))
    return {**ordered[(len(ordered) - 1) // 2], "cpu_s_runs": [r["cpu_s"] for r in runs]}


# --- Checking --------------------------------------------------------------------------------


def compare(kafka: KafkaRun, output: Path) -> dict[str, Any]:
    """The cleaner's cleaned segments (all but the active one) against segcompact's published
    output, per partition, record for record; also by key."""
    partitions: dict[str, Any] = {}
    for log, active in sorted(kafka.active_base.items()):
        logs = segment_logs(kafka.cleaned / log)
        if parse_segment_file(str(logs[-1]))[0] != active:
            raise AssertionError(f"{log}: the active segment moved: {logs[-1]}")
        theirs = data_records(logs[:-1])
        ours = data_records(segment_logs(Path(os.path.realpath(output / log))))
        by_key_theirs, by_key_ours = _by_key(theirs), _by_key(ours)
        shared = by_key_theirs.keys() & by_key_ours.keys()
        partitions[log] = {
            "kafka_records": len(theirs),
            "segcompact_records": len(ours),
            "kafka_tombstones": sum(r[3] is None for r in theirs),
            "segcompact_tombstones": sum(r[3] is None for r in ours),
            "duplicate_keys": len(theirs) - len(by_key_theirs) + len(ours) - len(by_key_ours),
            "only_kafka": len(by_key_theirs.keys() - shared),
            "only_segcompact": len(by_key_ours.keys() - shared),
            "differ": sum(by_key_theirs[k] != by_key_ours[k] for k in shared),
            "same": theirs == ours,
            "first_difference": next(
                ([_show(a), _show(b)] for a, b in zip(theirs, ours, strict=False) if a != b),
                None,
            ),
        }
    return {
        "partitions": partitions,
        "kept_records": sum(p["kafka_records"] for p in partitions.values()),
        "ok": bool(partitions) and all(p["same"] for p in partitions.values()),
    }


def _by_key(records: list[Rec]) -> dict[bytes, Rec]:
    return {r[2]: r for r in records}


def _show(r: Rec) -> dict[str, Any]:
    offset, timestamp, key, value, headers = r
    return {
        "offset": offset,
        "timestamp": timestamp,
        "key": key.decode("latin-1"),
        "value_bytes": None if value is None else len(value),
        "headers": len(headers),
    }


# --- Figures ---------------------------------------------------------------------------------


def _rate(mb: float, seconds: float | None) -> float | None:
    return mb / seconds if seconds and seconds > 0 else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def figures(out: dict[str, Any]) -> dict[str, Any]:
    mb = out["log"]["input_bytes"] / 1e6
    cleaner, jvm, runs = out["kafka"]["cleaner"], out["kafka"]["jvm"], out["segcompact"]
    marginal = runs["full"]["cpu_s"] - runs["empty"]["cpu_s"]
    rates = {
        "cleaner_thread": _rate(mb, cleaner["seconds"]),
        "cleaner_thread_proc": _rate(mb, cleaner["thread_cpu_s"]),
        "cleaner_jvm": _rate(mb, jvm["cleaning_cpu_s"]),
        "segcompact": _rate(mb, runs["full"]["cpu_s"]),
        "segcompact_marginal": _rate(mb, marginal),
    }
    return {
        "segcompact_marginal_cpu_s": marginal,
        "segcompact_marginal_wall_s": runs["full"]["wall_s"] - runs["empty"]["wall_s"],
        "mb_per_cpu_s": rates,
        "ratios": {
            f"{ours}_vs_{theirs}": _ratio(rates[ours], rates[theirs])
            for ours in ("segcompact", "segcompact_marginal")
            for theirs in ("cleaner_thread", "cleaner_jvm")
        },
    }


def _f(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def report(out: dict[str, Any]) -> None:
    log, kafka, runs, fig = out["log"], out["kafka"], out["segcompact"], out["figures"]
    cleaner, jvm, rates = kafka["cleaner"], kafka["jvm"], fig["mb_per_cpu_s"]
    print(
        f"\nlog: {log['input_bytes'] / MiB:,.1f} MiB of rolled lz4 segments "
        f"({log['segments']} segments of {log['segment_bytes'] / MiB:g} MiB, "
        f"{log['partitions']} partitions; the active segments are left out by both), "
        f"{kafka['produced']['records']:,} records produced "
        f"({kafka['produced']['tombstones']:,} tombstones) over "
        f"{log['keys_per_partition']:,} keys per partition by Kafka {log['kafka']} in "
        f"{kafka['produced']['produce_wall_s']:.1f} s"
    )
    full, empty = runs["full"], runs["empty"]
    jvm_cleaning = (jvm["cleaning_cpu_s"], jvm["cleaning_wall_s"])
    marginal = (fig["segcompact_marginal_cpu_s"], fig["segcompact_marginal_wall_s"])
    rows: list[tuple[str, float | None, float | None, str | None]] = [
        ("Kafka cleaner thread, its own figures", cleaner["seconds"], None, "cleaner_thread"),
        ("Kafka cleaner thread, /proc CPU", cleaner["thread_cpu_s"], None, "cleaner_thread_proc"),
        ("Kafka broker JVM while cleaning", *jvm_cleaning, "cleaner_jvm"),
        ("segcompact run --once, process tree", full["cpu_s"], full["wall_s"], "segcompact"),
        ("segcompact run --once, empty source", empty["cpu_s"], empty["wall_s"], None),
        ("segcompact marginal (full - empty)", *marginal, "segcompact_marginal"),
    ]
    if "first" in runs:
        first = runs["first"]
        rows.append(
            ("segcompact first run (archives classes)", first["cpu_s"], first["wall_s"], None)
        )
    print(f"\n  {'':<40} {'CPU s':>8} {'wall s':>8} {'MB/CPU-s':>9}")
    for name, cpu, wall, rate in rows:
        mb_s = None if rate is None else rates[rate]
        print(f"  {name:<40} {_f(cpu):>8} {_f(wall):>8} {_f(mb_s, '.3g'):>9}")
    r = fig["ratios"]
    print(
        f"\n  segcompact / Kafka's cleaner, MB per CPU second: "
        f"{_f(r['segcompact_vs_cleaner_thread'], '.3f')}x whole, "
        f"{_f(r['segcompact_marginal_vs_cleaner_thread'], '.3f')}x marginal (vs its thread's "
        f"own figures); {_f(r['segcompact_vs_cleaner_jvm'], '.3f')}x / "
        f"{_f(r['segcompact_marginal_vs_cleaner_jvm'], '.3f')}x (vs its JVM while cleaning)"
    )
    print(
        f"  cleaner: indexing {cleaner['index_seconds']:.1f} s of {cleaner['seconds']:.1f} s; "
        f"read {cleaner['processed_bytes'] / MiB:,.1f} MiB; broker start "
        f"{jvm['startup_cpu_s']:.1f} CPU s, producing {jvm['produce_cpu_s']:.1f} CPU s; "
        f"segcompact max RSS {runs['full']['max_rss_mib']:,.0f} MiB"
    )
    each = "; ".join(
        f"{name} {', '.join(f'{c:.1f}' for c in runs[name]['cpu_s_runs'])}"
        for name in ("full", "empty")
    )
    print(f"  segcompact's runs, CPU s (the median counts): {each}")
    check = out["check"]
    verdict = "OK, the same records" if check["ok"] else "WARNING: the outputs differ"
    print(f"  check: {verdict}; {check['kept_records']:,} records kept by Kafka's cleaner")
    for name, p in check["partitions"].items():
        if not p["same"]:
            print(f"    {name}: {p}")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in out['load_average'])} (1/5/15 min)")


# --- Driving ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("cleaner", __doc__)
    parser.add_argument("--size-mib", type=float, default=256, help="rolled log size (256)")
    parser.add_argument("--partitions", type=int, default=2, help="partitions (default 2)")
    parser.add_argument(
        "--keys-per-partition", type=int, default=200_000, help="distinct keys (200000)"
    )
    parser.add_argument("--tombstones", type=float, default=0.1, help="share of nulls (0.1)")
    parser.add_argument(
        "--segment-mib",
        type=float,
        help="the topic's segment size (default: an eighth of a partition's share)",
    )
    parser.add_argument("--seed", type=int, default=42)
    options.add_workdir(
        parser,
        "cleaner",
        "the broker, the copy and segcompact's tables go to <workdir>/run (emptied first)",
    )
    options.add_spark_conf_dir(parser)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="segcompact's runs on each source, the median counting (default 3)",
    )
    parser.add_argument(
        "--driver-memory", help="a [spark] spark.driver.memory (default: segcompact's, 1g)"
    )
    parser.add_argument(
        "--clean-timeout-s", type=float, default=1800, help="for Kafka's cleaner (1800)"
    )
    args = parser.parse_args(argv)
    if args.keys_per_partition < 1 or args.partitions < 1 or not 0 <= args.tombstones < 1:
        parser.error("--keys-per-partition and --partitions >= 1, 0 <= --tombstones < 1")
    if args.repeat < 1:
        parser.error("--repeat >= 1")

    share = args.size_mib * MiB / args.partitions
    segment_bytes = int(args.segment_mib * MiB if args.segment_mib else share / 8) >> 10 << 10
    segment_bytes = max(segment_bytes, 16 << 10)
    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print(f"cleaner benchmark: Kafka {kafka_version()}, {os.cpu_count()} cores, work in {work}")

    kafka = run_kafka(args, work / "kafka", segment_bytes)
    inputs = [p for d in sorted(kafka.raw.iterdir()) for p in rolled_logs(d)]
    out: dict[str, Any] = {
        "log": {
            "kafka": kafka_version(),
            "topic": TOPIC,
            "partitions": args.partitions,
            "keys_per_partition": args.keys_per_partition,
            "tombstone_share": args.tombstones,
            "segment_bytes": segment_bytes,
            "segments": len(inputs),
            "input_bytes": sum(p.stat().st_size for p in inputs),
        },
        "kafka": kafka.out,
    }
    segcompact_work = work / "segcompact"
    out["segcompact"] = run_segcompact(args, segcompact_work, kafka.raw, segment_bytes)
    out["figures"] = figures(out)
    out["check"] = compare(kafka, segcompact_work / "full" / "out")
    out["load_average"] = os.getloadavg()
    report(out)
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
