"""Thousands of small partitions: what segcompact's commands cost per partition.

    python -m tests.benchmarks.partitions [--partitions N]... [--records 200] [--keys 20]
        [--tombstones 0.1] [--reference-partitions 2] [--cleaner-up-to 1024] [--workdir D]

For each ``--partitions`` N (16, 1,024, 4,096 and 16,384 by default), one topic of N partitions,
each two rolled lz4 segments of ``--records`` records over ``--keys`` keys (a ``--tombstones``
share of null values) and an empty active segment, **written by segcompact's own encoder**
(``tests/support/small_partitions.py``), not by a broker: one would take hours to create and
fill 16,384 partitions here. Then, each command as a user runs it (fresh tables, Spark's
defaults), a whole process tree under :func:`measure.reap` (the Spark JVM included):

1. the first ``run --once``;
2. a steady pass: a new segment rolled in every partition, then ``run --once`` again;
3. ``materialize``, ``status --format json``, ``purge`` and a ``run --once`` with nothing new.

For each: wall and CPU seconds, CPU per partition and its growth from the size before, the peak
resident set of the JVM (Spark's driver, local mode) and of the Python driver, the peak of open
file handles of the run's processes (from /proc, every 0.1 and 0.2 s), and the Delta log files,
data files (Parquet, deletion vectors), output files and checkpoint files the step wrote.

Beside each size, the same bytes in ``--reference-partitions`` partitions (2; records and keys
per partition scaled up to the same totals) run the first and the steady pass, so that the
issue's "N partitions cost at most twice what the same bytes cost in 2" is a ratio of one run;
the JVM's peak RSS beside it gives its growth per partition. For sizes up to ``--cleaner-up-to``
(1,024: a broker here holds a file per segment open, and 4,096 partitions of three segments
near this machine's limit of open files), Kafka's own cleaner (a real Kafka 4.3 broker, one
cleaner thread, ``tests/benchmarks/cleaner.py``'s measures) cleans the same segment files, planted
in its log dir while it is stopped: its CPU beside the first pass's, and both outputs compared
record for record. After each pass segcompact's output is compared with the reference model's.
Finally the issue's targets, each met, missed, or unknown where the size it names did not run.

Nothing here asserts a time: the figures go to stdout (and ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from segcompact.config import load_config
from segcompact.format.logdir import parse_segment_file
from segcompact.lease import LEASE_DIR
from segcompact.storage import LocalInputFile
from tests.benchmarks import options
from tests.benchmarks.cleaner import HOLD_MS, KafkaRun, clean, compare
from tests.benchmarks.measure import descendants, reaped
from tests.benchmarks.memory import PeakRss, _role
from tests.e2e.harness import CLI, model_of, model_output, output_records
from tests.interop.compacted import segment_logs
from tests.support import config as support_config
from tests.support.jvm import kafka_version
from tests.support.kafka_broker import KafkaBroker
from tests.support.keyed_log import BASE_TIMESTAMP, MiB
from tests.support.model import read_log_records
from tests.support.small_partitions import SmallPartitions

TOPIC = "parts"
SIZES = (16, 1024, 4096, 16384)
ROLLED = 2  # rolled segments per partition before the first pass
# The model's "now", when it merges and expires: after every record (none is young). Its
# tombstones, like the runs', are a day (delete.retention.ms) from their horizon: all kept.
MODEL_NOW_MS = BASE_TIMESTAMP + 10**10
PASSES = ("first", "steady")
DRIVERS = ("jvm", "python driver")  # Spark's driver (local mode) and segcompact's
COMMANDS = {
    "materialize": ["materialize"],
    "status": ["status", "--format", "json"],
    "purge": ["purge"],
    "idle": ["run", "--once"],
}
# The issue's targets.
CPU_MS_PER_PARTITION = 10
SAME_BYTES_RATIO = 2
SAME_BYTES_AT = 4096
MANY = 16384
DRIVER_KIB_PER_PARTITION = 4  # "a few kB"
STATUS_S = 2
IDLE_CPU_S = 10


# --- Measuring one command -------------------------------------------------------------------


class OpenFiles(threading.Thread):
    """The peak number of open file handles of segcompact's processes (the roles of
    :class:`PeakRss`) below this one: all of them together, and the process holding most."""

    def __init__(self, period_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.period_s = period_s
        self.total = self.process = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.period_s):
            total = 0
            for pid in descendants(os.getpid()):
                try:
                    with open(f"/proc/{pid}/cmdline") as f:
                        if _role(f.read()) is None:
                            continue
                    n = len(os.listdir(f"/proc/{pid}/fd"))
                except OSError:
                    continue  # gone meanwhile
                total += n
                self.process = max(self.process, n)
            self.total = max(self.total, total)


def _files(job: Path) -> dict[str, set[str]]:
    """The files under a job's directory by kind: Delta logs, Delta data (Parquet, deletion
    vectors), the output's segments and manifests, the streaming checkpoint's (leases aside)."""
    out: dict[str, set[str]] = {k: set() for k in ("delta_log", "data", "output", "checkpoint")}
    for folder, subfolders, names in os.walk(job):
        # A command's leases (in a folder, or beside a table) are not what it writes.
        subfolders[:] = [f for f in subfolders if not f.endswith(LEASE_DIR)]
        rel = os.path.relpath(folder, job)
        top = rel.split(os.sep, 1)[0]
        kind = (
            "delta_log"
            if "_delta_log" in rel.split(os.sep)
            else "output"
            if top == "out"
            else "checkpoint"
            if top == "chk"
            else "data"
        )
        for name in names:
            if kind != "data" or name.endswith((".parquet", ".bin")):
                out[kind].add(os.path.join(rel, name))
    return out


def measured(
    argv: Sequence[str | Path], work: Path, job: Path, spark_conf_dir: Path, timeout_s: float
) -> Any:
    """``argv`` under :func:`reap`: its figures, its processes' peak RSS and open files, the
    files it wrote under ``job`` by kind, the last line it printed."""
    before = _files(job)
    rss, handles = PeakRss(), OpenFiles()
    rss.start()
    handles.start()
    try:
        figures = reaped(argv, work, spark_conf_dir, timeout_s=timeout_s)
    finally:
        for sampler in (rss, handles):
            sampler.stop.set()
            sampler.join()
    after = _files(job)
    return {
        **figures,
        "peak_rss_mib": {role: r["max_mib"] for role, r in rss.by_role().items()},
        "open_files": {"all": handles.total, "one_process": handles.process},
        "files_written": {kind: len(after[kind] - before[kind]) for kind in after},
        "said": _last_line(work / "stdout.txt"),
    }


def _last_line(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - 4096))
        lines = f.read().decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else ""


# --- Checking --------------------------------------------------------------------------------


def check(logs: Sequence[SmallPartitions], config_path: Path, rolled: int) -> dict[str, Any]:
    """segcompact's published output against the reference model of the first ``rolled``
    segments of every partition of ``logs``."""
    config = load_config(config_path)
    records = [
        r
        for log in logs
        for p in log.numbers
        for path in segment_logs(log.directory(p))[:rolled]
        for r in read_log_records(LocalInputFile(path), log.topic, p)
    ]
    want = model_output(model_of(config, records, MODEL_NOW_MS))
    got = output_records(config)
    differ = sorted(tp for tp in want.keys() | got.keys() if want.get(tp) != got.get(tp))
    return {
        "ok": not differ and len(got) == sum(log.partitions for log in logs),
        "partitions": len(got),
        "kept_records": sum(len(rs) for rs in got.values()),
        "tombstones": sum(r[2] is None for rs in got.values() for r in rs),
        "differ": [f"{t}-{p}" for t, p in differ[:10]],
    }


# --- Kafka's cleaner -------------------------------------------------------------------------


def kafka_cleaner(log: SmallPartitions, work: Path, timeout_s: float) -> KafkaRun:
    """Kafka's cleaner on ``log``'s segment files: a broker creates the topic and stops; the
    files go into its partition directories in place of its empty segment; the broker starts
    again (its clean shutdown marker: it loads them without recovery) and cleans them."""
    properties = {"log.cleaner.threads": 1, "log.cleaner.backoff.ms": 100}
    broker = KafkaBroker(work, properties=properties, heap="1g", fast_start=False)
    with broker:
        broker.create_topic(
            log.topic,
            log.partitions,
            config={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "1.0",  # held until the files are in
                "min.compaction.lag.ms": HOLD_MS,
            },
            timeout=300,
        )
    active_base: dict[str, int] = {}
    for p in range(log.partitions):
        target = broker.partition_dir(log.topic, p)
        for path in target.iterdir():
            if path.suffix in (".log", ".index", ".timeindex"):
                path.unlink()
        for path in log.directory(p).iterdir():
            shutil.copyfile(path, target / path.name)
        active_base[target.name] = parse_segment_file(str(segment_logs(target)[-1]))[0]
    with broker:
        since = broker.log_file.stat().st_size
        cleaner, jvm = clean(broker, log.topic, since, active_base, timeout_s)
    figures = {"cleaner": cleaner, "jvm": {**jvm, "startup_wall_s": broker.startup_seconds}}
    return KafkaRun(log.root, broker.log_dir, active_base, figures)


# --- One size --------------------------------------------------------------------------------


def describe(log: SmallPartitions) -> dict[str, Any]:
    logs = [p for d in log.numbers for p in segment_logs(log.directory(d))]
    return {
        "partitions": log.partitions,
        "records_per_segment": log.records,
        "keys_per_partition": log.keys,
        "rolled_segments": sum(1 for p in logs if p.stat().st_size),
        "bytes": sum(p.stat().st_size for p in logs),
    }


def run_size(
    args: argparse.Namespace,
    log: SmallPartitions,
    work: Path,
    spark_conf_dir: Path,
    *,
    commands: bool,
    cleaner: bool,
) -> dict[str, Any]:
    """The passes (and with ``commands`` the other commands) on ``log``, written here; with
    ``cleaner``, Kafka's cleaner beside the first pass."""
    log.write(ROLLED)
    job = work / "job"
    config = support_config.write_config(job, [log.root])
    out: dict[str, Any] = {"log": describe(log), "steps": {}, "check": {}}
    print(
        f"  {log.partitions:,} partitions: {out['log']['bytes'] / MiB:,.1f} MiB in "
        f"{out['log']['rolled_segments']:,} rolled segments"
    )

    def step(name: str, command: Sequence[str]) -> None:
        print(f"    {name}: segcompact {' '.join(command)}")
        argv: list[str | Path] = [*CLI, *command, "--config", config]
        out["steps"][name] = measured(argv, work / name, job, spark_conf_dir, args.run_timeout_s)

    step("first", ["run", "--once"])
    out["check"]["first"] = check([log], config, ROLLED)
    if cleaner:
        print("    Kafka's cleaner on the same segments")
        kafka = kafka_cleaner(log, work / "kafka", args.clean_timeout_s)
        out["kafka"] = {**kafka.out, "check": compare(kafka, job / "out")}
    log.roll(ROLLED)
    print(f"    a new segment in each of {log.partitions:,} partitions")
    step("steady", ["run", "--once"])
    out["check"]["steady"] = check([log], config, ROLLED + 1)
    if commands:
        for name, command in COMMANDS.items():
            step(name, command)
        status = json.loads((work / "status" / "stdout.txt").read_text())
        out["steps"]["status"]["partitions_listed"] = len(status["partitions"])
    return out


# --- Figures ---------------------------------------------------------------------------------


def figures(sizes: list[dict[str, Any]]) -> None:
    """Per size and step: CPU ms per partition, its growth from the size before, and beside the
    same bytes in few partitions, the ratio and the growth of the JVM's and the driver's RSS."""
    before: dict[str, Any] | None = None
    for size in sizes:
        n = size["partitions"]
        for name, s in size["steps"].items():
            s["cpu_ms_per_partition"] = 1000 * s["cpu_s"] / n
            prior = before["steps"].get(name) if before else None
            s["marginal_cpu_ms_per_partition"] = (
                None
                if prior is None or before is None
                else 1000 * (s["cpu_s"] - prior["cpu_s"]) / (n - before["partitions"])
            )
        ref = size.get("reference")
        if ref is not None:
            m = ref["log"]["partitions"]
            size["same_bytes"] = {
                name: {
                    "cpu_ratio": size["steps"][name]["cpu_s"] / ref["steps"][name]["cpu_s"],
                    "wall_ratio": size["steps"][name]["wall_s"] / ref["steps"][name]["wall_s"],
                    "cpu_ms_per_extra_partition": 1000
                    * (size["steps"][name]["cpu_s"] - ref["steps"][name]["cpu_s"])
                    / (n - m),
                }
                for name in PASSES
            }
            size["rss_kib_per_extra_partition"] = {
                role: 1024 * (_peak(size, role) - _peak(ref, role)) / (n - m) for role in DRIVERS
            }
        kafka = size.get("kafka")
        if kafka is not None:
            first = size["steps"]["first"]["cpu_s"]
            thread, jvm = kafka["cleaner"]["thread_cpu_s"], kafka["jvm"]["cleaning_cpu_s"]
            # MB per CPU second, segcompact's over the cleaner's: the same bytes on both sides.
            kafka["ratio_vs_thread"] = thread / first if thread else None
            kafka["ratio_vs_jvm"] = jvm / first
        before = size


def _peak(run: dict[str, Any], role: str) -> float:
    """The peak RSS of ``role``'s processes over a run's passes, MiB."""
    return max(float(run["steps"][name]["peak_rss_mib"].get(role, 0.0)) for name in PASSES)


def targets(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets: each with what was measured and ``met`` True, False or None
    (unknown: the size it names did not run, or the figure is missing)."""
    by_n = {s["partitions"]: s for s in sizes}
    largest = sizes[-1]
    per_pass = {p: largest["steps"][p]["cpu_ms_per_partition"] for p in PASSES}
    out = [
        {
            "target": f"at most {CPU_MS_PER_PARTITION} ms of CPU per partition per pass",
            "measured": f"{_ms(per_pass)} at {largest['partitions']:,} partitions",
            "met": max(per_pass.values()) <= CPU_MS_PER_PARTITION,
        }
    ]
    at = by_n.get(SAME_BYTES_AT, {}).get("same_bytes")
    out.append(
        {
            "target": f"{SAME_BYTES_AT:,} partitions cost at most {SAME_BYTES_RATIO}x the same "
            "bytes in 2 partitions",
            "measured": "not run"
            if at is None
            else ", ".join(f"{p} {at[p]['cpu_ratio']:.2f}x CPU" for p in PASSES),
            "met": None
            if at is None
            else max(at[p]["cpu_ratio"] for p in PASSES) <= SAME_BYTES_RATIO,
        }
    )
    many = by_n.get(MANY)
    kib = _rss_growth(many)
    out.append(
        {
            "target": f"{MANY:,} partitions work; the driver grows by at most "
            f"{DRIVER_KIB_PER_PARTITION} kB per partition",
            "measured": "not run" if many is None else _at_many(many, kib),
            "met": None
            if many is None or kib is None
            else _all_ok(many) and kib <= DRIVER_KIB_PER_PARTITION,
        }
    )
    status = None if many is None else many["steps"]["status"]["wall_s"]
    out.append(
        {
            "target": f"status under {STATUS_S} s at {MANY:,} partitions",
            "measured": "not run" if status is None else f"{status:.2f} s",
            "met": None if status is None else status < STATUS_S,
        }
    )
    idle = {s["partitions"]: s["steps"]["idle"]["cpu_s"] for s in sizes}
    out.append(
        {
            "target": f"an idle run --once under {IDLE_CPU_S} CPU s",
            "measured": ", ".join(f"{c:.1f} at {n:,}" for n, c in idle.items()),
            "met": max(idle.values()) < IDLE_CPU_S,
        }
    )
    return out


def _rss_growth(size: dict[str, Any] | None) -> float | None:
    """The drivers' (the JVM's, the Python driver's) larger peak RSS growth per partition
    beyond the same bytes in few partitions, kB; None without a reference run."""
    growth = None if size is None else size.get("rss_kib_per_extra_partition")
    return None if growth is None else max(float(kib) for kib in growth.values())


def _at_many(size: dict[str, Any], kib: float | None) -> str:
    steps = size["steps"]
    return (
        f"output {'right' if _all_ok(size) else 'WRONG'}, the drivers' RSS "
        + ("unknown (no reference run)" if kib is None else f"{kib:+.1f} kB per partition")
        + f", open files peak {max(s['open_files']['all'] for s in steps.values()):,}"
        + ", Delta log files written per pass "
        + "/".join(str(steps[p]["files_written"]["delta_log"]) for p in PASSES)
    )


def _all_ok(size: dict[str, Any]) -> bool:
    """segcompact's output was the model's after each pass, and the cleaner's where it ran."""
    checks = [*size["check"].values()]
    if "kafka" in size:
        checks.append(size["kafka"]["check"])
    return all(c["ok"] for c in checks)


def _ms(per_pass: dict[str, float]) -> str:
    return ", ".join(f"{p} {ms:.1f} ms" for p, ms in per_pass.items())


def _f(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def report(out: dict[str, Any]) -> None:
    print(
        f"\npartitions benchmark: segments written by segcompact's encoder, {os.cpu_count()} "
        f"cores; CPU of each command's whole process tree"
    )
    head = (
        f"  {'step':<12} {'CPU s':>7} {'wall s':>7} {'ms/part':>8} {'marg.':>7} {'fds':>6} "
        f"{'JVM MiB':>8} {'py MiB':>7} {'dlog':>5} {'data':>6} {'out':>6} {'chk':>4}"
    )
    for size in out["sizes"]:
        log = size["log"]
        print(
            f"\n{log['partitions']:,} partitions, {log['bytes'] / MiB:,.1f} MiB, "
            f"{log['records_per_segment']} records a segment over {log['keys_per_partition']} "
            f"keys (marg.: CPU ms per partition more than at the size before)"
        )
        print(head)
        for name, s in size["steps"].items():
            rss, w = s["peak_rss_mib"], s["files_written"]
            marginal = _f(s["marginal_cpu_ms_per_partition"], ".2f")
            print(
                f"  {name:<12} {s['cpu_s']:7.1f} {s['wall_s']:7.2f} "
                f"{s['cpu_ms_per_partition']:8.2f} {marginal:>7} "
                f"{s['open_files']['all']:6,} {_f(rss.get('jvm'), ',.0f'):>8} "
                f"{_f(rss.get('python driver'), ',.0f'):>7} {w['delta_log']:5,} {w['data']:6,} "
                f"{w['output']:6,} {w['checkpoint']:4,}"
            )
        steps = size["steps"]
        for name in ("first", "steady", "materialize", "purge", "idle"):
            print(f"  {name} said: {steps[name]['said'] or '(nothing)'}")
        print(f"  status listed {steps['status']['partitions_listed']:,} partitions")
        for name, c in size["check"].items():
            verdict = "the model's records" if c["ok"] else f"WRONG, differ: {c['differ']}"
            print(
                f"  output after the {name} pass: {verdict} ({c['partitions']:,} partitions, "
                f"{c['kept_records']:,} records, {c['tombstones']:,} tombstones)"
            )
        same = size.get("same_bytes")
        if same is not None:
            ref = size["reference"]
            print(
                f"  same bytes in {ref['log']['partitions']} partitions: "
                + "; ".join(
                    f"{p} {ref['steps'][p]['cpu_s']:.1f} CPU s, {ref['steps'][p]['wall_s']:.1f} s "
                    f"wall: {size['partitions']:,} partitions cost {same[p]['cpu_ratio']:.2f}x "
                    f"CPU ({same[p]['cpu_ms_per_extra_partition']:.2f} ms per extra partition)"
                    for p in PASSES
                )
            )
            growth = size["rss_kib_per_extra_partition"]
            print(
                "  peak RSS per extra partition: "
                + ", ".join(f"{role} {kib:+.1f} kB" for role, kib in growth.items())
            )
        kafka = size.get("kafka")
        if kafka is not None:
            c = kafka["cleaner"]
            verdict = "the same records" if kafka["check"]["ok"] else "WARNING: outputs differ"
            print(
                f"  Kafka's cleaner (a real broker, Kafka {out['kafka_version']}): thread "
                f"{_f(c['thread_cpu_s'], '.2f')} CPU s (its own figures {c['seconds']:.1f} s), "
                f"broker JVM {kafka['jvm']['cleaning_cpu_s']:.1f} CPU s over "
                f"{kafka['jvm']['cleaning_wall_s']:.1f} s; segcompact's first pass / the "
                f"cleaner, MB per CPU s: {_f(kafka['ratio_vs_thread'], '.4f')}x (thread), "
                f"{kafka['ratio_vs_jvm']:.4f}x (JVM); {verdict}"
            )
    print("\ntargets (issue 40):")
    for t in out["targets"]:
        verdict = {True: "met", False: "MISSED", None: "unknown"}[t["met"]]
        print(f"  {t['target']}: {t['measured']}: {verdict}")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in out['load_average'])} (1/5/15 min)")


# --- Driving ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("partitions", __doc__)
    parser.add_argument(
        "--partitions",
        type=int,
        action="append",
        help="repeatable, ascending (default: 16, 1024, 4096, 16384)",
    )
    parser.add_argument("--records", type=int, default=200, help="per segment (200)")
    parser.add_argument("--keys", type=int, default=20, help="per partition (20)")
    parser.add_argument("--tombstones", type=float, default=0.1, help="share of nulls (0.1)")
    parser.add_argument(
        "--reference-partitions",
        type=int,
        default=2,
        help="the same bytes in this many partitions beside each size; 0: none (2)",
    )
    parser.add_argument(
        "--cleaner-up-to",
        type=int,
        default=1024,
        help="Kafka's cleaner beside sizes up to this many partitions; 0: none (1024)",
    )
    parser.add_argument(
        "--clean-timeout-s", type=float, default=1800, help="for Kafka's cleaner (1800)"
    )
    parser.add_argument(
        "--run-timeout-s",
        type=float,
        default=4 * 3600,
        help="for each segcompact command: a bound on a hang, not a target (14400)",
    )
    parser.add_argument("--seed", type=int, default=42)
    options.add_workdir(
        parser, "partitions", "logs, tables and the runs' output go to <workdir>/run (emptied)"
    )
    options.add_spark_conf_dir(parser)
    args = parser.parse_args(argv)
    sizes = args.partitions or list(SIZES)
    if sizes != sorted(set(sizes)) or sizes[0] < 1:
        parser.error("--partitions: distinct positive sizes in ascending order")
    if args.records < 1 or args.keys < 1 or not 0 <= args.tombstones < 1:
        parser.error("--records and --keys >= 1, 0 <= --tombstones < 1")
    if args.reference_partitions < 0 or args.cleaner_up_to < 0:
        parser.error("--reference-partitions and --cleaner-up-to >= 0")

    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spark_conf_dir = options.spark_conf_dir(args, work)
    print(f"partitions benchmark: {sizes} partitions, work in {work}")
    out: dict[str, Any] = {"kafka_version": kafka_version(), "sizes": []}
    with options.own_cache(work):
        if not any(spark_conf_dir.iterdir()):
            # The first run on a machine writes the JVM's class archive; the others map it.
            print("  warm-up: a first run --once writes the JVM's class archive")
            warm = shape(args, work / "warm-up", 2, 1)
            warm.write(ROLLED)
            config = support_config.write_config(work / "warm-up" / "job", [warm.root])
            first: list[str | Path] = [*CLI, "run", "--once", "--config", config]
            out["warm_up"] = reaped(
                first, work / "warm-up", spark_conf_dir, timeout_s=args.run_timeout_s
            )
        for n in sizes:
            folder = work / f"p{n}"
            size = run_size(
                args,
                shape(args, folder, n, 1),
                folder,
                spark_conf_dir,
                commands=True,
                cleaner=n <= args.cleaner_up_to,
            )
            size["partitions"] = n
            m = args.reference_partitions
            if m:
                folder = work / f"p{n}-same-bytes"
                size["reference"] = run_size(
                    args,
                    shape(args, folder, m, n / m),
                    folder,
                    spark_conf_dir,
                    commands=False,
                    cleaner=False,
                )
            out["sizes"].append(size)
    figures(out["sizes"])
    out["targets"] = targets(out["sizes"])
    out["load_average"] = os.getloadavg()
    options.write_json(args, out)
    report(out)
    return out


def shape(args: argparse.Namespace, folder: Path, partitions: int, scale: float) -> SmallPartitions:
    """``partitions`` partitions under ``folder``, each ``scale`` times the records and keys."""
    return SmallPartitions(
        folder / "log",
        TOPIC,
        partitions,
        max(1, round(args.records * scale)),
        max(1, round(args.keys * scale)),
        args.tombstones,
        args.seed,
    )


if __name__ == "__main__":
    main()
