"""segcompact's fixed and idle cost: what it spends with nothing to compact.

    python -m tests.benchmarks.fixed_cost [--idle-s 120] [--workdir D] [--json F]

1. ``segcompact run --once --verbose`` on an empty source directory, fresh tables, as a new user
   runs it, under :func:`tests.benchmarks.measure.reap` (the Spark JVM, which outlives the
   Python driver, is counted): CPU and wall seconds of the whole process tree, and the steps'
   own times from its ``--verbose`` log (the Spark session, the tables, the query, the upkeep).
   The first run's JVM writes the archive of its classes (``spark/class_archive.py``; none
   where ``--spark-conf-dir`` holds files), in ``<workdir>/run/cache``.
2. The same against the tables it left (a restart: the tables exist, nothing is created; the
   JVM maps the first one's class archive).
3. The continuous job, ``segcompact run --verbose``, on the same empty source: once it has
   warmed up and ``--settle-s`` more seconds have passed (the query's start, its first
   trigger), the CPU seconds the machine is busy over ``--idle-s`` seconds (``/proc/stat``:
   run it on a quiet machine; this process sleeps), beside its process tree's. The default
   window spans two upkeeps at ``materialize_check_interval_ms`` = 60 s and twelve empty
   triggers at 10 s. Kafka's cleaner spends nothing while there is nothing to clean.

Nothing here asserts a time: the figures go to stdout (and ``--json``).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.benchmarks import options
from tests.benchmarks.measure import busy_cpu_seconds, run_once, tree_cpu_seconds
from tests.e2e.harness import Background, wait_for
from tests.support.config import write_config

# A --verbose step line: "segcompact: <logger>: <step>: <seconds> s" (after the progress bar's
# last line, which ends without a newline, where it is the first).
_STEP = re.compile(r"segcompact: [\w.]+: (?P<step>[^:\n]+): (?P<seconds>\d+(?:\.\d+)?) s$", re.M)


def steps(stderr: str) -> dict[str, float]:
    """Seconds per step named in a ``--verbose`` log, summed over repeats."""
    out: dict[str, float] = {}
    for m in _STEP.finditer(stderr):
        out[m["step"]] = out.get(m["step"], 0.0) + float(m["seconds"])
    return out


def once(config: Path, work: Path, spark_conf_dir: Path) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    figures = run_once(config, work, spark_conf_dir, "--verbose")
    figures["steps"] = steps((work / "stderr.txt").read_text(errors="replace"))
    return figures


def idle(
    config_path: Path, work: Path, spark_conf_dir: Path, settle_s: float, idle_s: float
) -> dict[str, Any]:
    """CPU seconds of the continuous job's process tree over ``idle_s`` of an empty source."""
    work.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    with Background(
        "run", "--config", config_path, "--verbose", cwd=work, spark_conf_dir=spark_conf_dir
    ) as job:
        # The warm-up comes last before the query starts.
        wait_for("the job's warm-up", lambda: "warm-up:" in job.stderr(), running=job)
        startup_s = time.perf_counter() - began
        time.sleep(settle_s)
        busy0, tree0, t0 = busy_cpu_seconds(), tree_cpu_seconds(), time.perf_counter()
        log_from = len(job.stderr())
        time.sleep(idle_s)
        busy1, tree1 = busy_cpu_seconds(), tree_cpu_seconds()
        seconds = time.perf_counter() - t0
        idle_log = job.stderr()[log_from:]
        if not job.running():
            raise AssertionError(f"the job exited while idle:\n{job.stderr()[-3000:]}")
    if busy0 is None or busy1 is None or tree0 is None or tree1 is None:
        raise AssertionError("no /proc: CPU time cannot be read")
    cpu = busy1 - busy0
    return {
        "startup_wall_s": startup_s,
        "window_s": seconds,
        "cpu_s": cpu,
        # Less than the machine's when a process ended unwaited for (its time is lost).
        "tree_cpu_s": tree1 - tree0,
        "cpu_s_per_minute": cpu * 60 / seconds,
        "core_share": cpu / seconds,
        "steps": steps(idle_log),
        "batches": len(re.findall(r"^segcompact: [\w.]+: batch \d+:", idle_log, re.M)),
    }


def report(out: dict[str, Any]) -> None:
    print(f"\nfixed and idle cost, {os.cpu_count()} cores")
    for name in ("fresh", "restart"):
        r = out[name]
        print(
            f"  run --once, empty source, {name + ' tables':<15} {r['cpu_s']:6.1f} CPU s "
            f"{r['wall_s']:6.1f} s wall (max RSS {r['max_rss_mib']:,.0f} MiB)"
        )
        for step, seconds in sorted(r["steps"].items(), key=lambda kv: -kv[1]):
            print(f"      {step:<30} {seconds:6.1f} s")
    i = out["idle"]
    print(
        f"  run (continuous), idle {i['window_s']:.0f} s after {i['startup_wall_s']:.0f} s to "
        f"start: {i['cpu_s']:.1f} CPU s (its process tree {i['tree_cpu_s']:.1f}), "
        f"{i['cpu_s_per_minute']:.2f} CPU s per minute, {100 * i['core_share']:.1f} % of a "
        f"core, {i['batches']} micro-batches"
    )
    for step, seconds in sorted(i["steps"].items(), key=lambda kv: -kv[1]):
        print(f"      {step:<30} {seconds:6.1f} s")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("fixed_cost", __doc__)
    parser.add_argument("--idle-s", type=float, default=120, help="idle window (120)")
    parser.add_argument(
        "--settle-s", type=float, default=30, help="after the query's start, before it (30)"
    )
    options.add_workdir(
        parser, "fixed-cost", "tables, checkpoint and logs go to <workdir>/run (emptied first)"
    )
    options.add_spark_conf_dir(parser)
    args = parser.parse_args(argv)

    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    source = work / "source"
    source.mkdir(parents=True)
    spark_conf_dir = options.spark_conf_dir(args, work)
    config = write_config(work / "job", [source])
    with options.own_cache(work):
        out: dict[str, Any] = {
            "fresh": once(config, work / "fresh", spark_conf_dir),
            "restart": once(config, work / "restart", spark_conf_dir),
            "idle": idle(config, work / "idle", spark_conf_dir, args.settle_s, args.idle_s),
        }
    report(out)
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
