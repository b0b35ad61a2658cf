"""Scaling out: the same log through ``segcompact run --once`` on a Spark standalone cluster of
one, then two, single-core executors (``tests/support/spark_cluster.py``), fresh tables each.

    python -m tests.benchmarks.scaling --size-mib 256 --partitions 8 --keys 3000000 [--repeat N]

The log is generated once and cached under ``--workdir`` (``tests/support/keyed_log.py``). Each
run is ``segcompact run --once`` as a user runs it, its config's ``[spark]`` naming the
cluster's master: the driver in its own process, one executor of one core on each worker. Its
wall time is from its start to its exit (``tests/benchmarks/measure.py``), best of
``--repeat``; a cluster is started for each size and stopped after its runs. The issue's target
is a run 1.7x as fast on two executors as on one. On a machine of two cores, which the driver,
the Python workers and the cluster's own JVMs share with the executors, two executors cannot
have a core each to themselves: the figure says what this machine gives, and is printed,
never asserted.

Beside the run's wall time it reads the machine's busy CPU time (``/proc/stat``: the driver,
the executors and their Python workers, which are not the driver's children) and Spark's event
log: the time some stage ran (the union of
the stages' spans, so the executors' share of the run) and the task-seconds in them. Their ratio
says whether the distributed part scales, apart from the driver's fixed cost around it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.benchmarks import options
from tests.benchmarks.measure import run_once
from tests.support.config import write_config
from tests.support.keyed_log import generate
from tests.support.spark_cluster import SparkCluster

SIZES = (1, 2)  # single-core executors
TARGET = 1.7


def stage_seconds(events: Path) -> tuple[float, float]:
    """From a Spark event log directory (uncompressed, one event a line): the seconds during
    which at least one stage ran (the union of the completed stages' spans), and the tasks' run
    time summed, in seconds."""
    spans: list[tuple[int, int]] = []
    task_ms = 0
    for log in sorted(events.iterdir()):
        with open(log) as f:
            for line in f:
                event = json.loads(line)
                kind = event.get("Event")
                if kind == "SparkListenerStageCompleted":
                    info = event["Stage Info"]
                    if "Submission Time" in info and "Completion Time" in info:
                        spans.append((info["Submission Time"], info["Completion Time"]))
                elif kind == "SparkListenerTaskEnd":
                    task_ms += event.get("Task Metrics", {}).get("Executor Run Time", 0)
    busy, end = 0, None
    for start, stop in sorted(spans):
        if end is None or start > end:
            busy += stop - start
            end = stop
        elif stop > end:
            busy += stop - end
            end = stop
    return busy / 1000, task_ms / 1000


def busy_core_seconds() -> float:
    """The machine's CPU time not idle since boot, every core's, in seconds (``/proc/stat``)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def runs(
    log_root: Path, work: Path, workers: int, repeat: int, spark_conf_dir: Path
) -> dict[str, float]:
    """The best of ``repeat`` runs on a cluster of ``workers`` single-core workers: the run's
    wall seconds, and the stages' (``stage_seconds``) in that run."""
    best: dict[str, float] = {"wall_s": float("inf")}
    with SparkCluster(work / "cluster", workers=workers, cores=1, memory="2g") as cluster:
        for n in range(repeat):
            job = work / f"run-{n}"
            shutil.rmtree(job, ignore_errors=True)
            events = job / "events"
            events.mkdir(parents=True)
            spark = {
                **cluster.spark_settings(),
                "spark.executor.memory": "1g",
                "spark.eventLog.enabled": "true",
                "spark.eventLog.dir": events.as_uri(),
                "spark.eventLog.compress": "false",
                "spark.eventLog.rolling.enabled": "false",
            }
            config = write_config(job, [log_root], rolled_only=False, spark=spark)
            before = busy_core_seconds()
            wall = float(run_once(config, job, spark_conf_dir)["wall_s"])
            busy = busy_core_seconds() - before
            stages, tasks = stage_seconds(events)
            print(
                f"  {workers} executor(s), run {n + 1}: {wall:.1f} s, stages running "
                f"{stages:.1f} s, tasks {tasks:.1f} s; the machine busy {busy:.1f} core-s "
                f"({busy / wall:.2f} of its {os.cpu_count()} cores on average)",
                flush=True,
            )
            if wall < best["wall_s"]:
                best = {"wall_s": wall, "stages_s": stages, "tasks_s": tasks, "busy_s": busy}
    return best


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("scaling", __doc__)
    parser.add_argument("--size-mib", type=float, default=256, help="log size (256)")
    parser.add_argument("--partitions", type=int, default=8, help="partitions (8)")
    parser.add_argument("--keys", type=int, default=200_000, help="distinct keys (200000)")
    parser.add_argument("--segment-mib", type=float, default=16, help="segment size (16)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cluster size, best (1)")
    options.add_workdir(parser, "scaling", "the cached log, and <workdir>/run (emptied first)")
    options.add_spark_conf_dir(parser)
    args = parser.parse_args(argv)

    log = generate(args.workdir, args.size_mib, args.partitions, args.keys, args.segment_mib)
    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    spark_conf_dir = options.spark_conf_dir(args, work)
    print(
        f"log: {log.file_bytes / 1e6:.0f} MB, {args.partitions} partitions, {log.records} records"
    )
    seconds = {}
    with options.own_cache(work):
        for workers in SIZES:
            seconds[workers] = runs(
                Path(log.root), work / f"{workers}", workers, args.repeat, spark_conf_dir
            )
    one, two = seconds[1], seconds[2]
    ratio = one["wall_s"] / two["wall_s"]
    stages = one["stages_s"] / two["stages_s"]
    print(
        f"run --once: {one['wall_s']:.1f} s on 1 executor, {two['wall_s']:.1f} s on 2: "
        f"{ratio:.2f}x as fast (target {TARGET}x)\n"
        f"stages running: {one['stages_s']:.1f} s on 1, {two['stages_s']:.1f} s on 2: "
        f"{stages:.2f}x; outside them (the driver alone): {one['wall_s'] - one['stages_s']:.1f} s "
        f"and {two['wall_s'] - two['stages_s']:.1f} s"
    )
    out = {
        "seconds": seconds,
        "ratio": ratio,
        "stages_ratio": stages,
        "target": TARGET,
        "log_mb": log.file_bytes / 1e6,
    }
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
