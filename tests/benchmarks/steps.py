"""Where the CPU of one ``segcompact run --once`` goes, step by step, for one or more checkouts
side by side.

    python -m tests.benchmarks.steps [--log D] [--segment-mib 16] [--code NAME=SRC]...
        [--repeat 3] [--workdir D]

The log is the cleaner benchmark's broker-written copy (``--log``, by default the one
``make bench-cleaner`` leaves in ``<tmp>/segcompact-cleaner/run/kafka/raw``: 258-272 MB of
rolled lz4 segments, 2 partitions, 200,000 keys each, 10 % tombstones), read as that benchmark
reads it (Kafka's topic defaults, the topic's segment size, rolled segments only, fresh tables).
Each ``--code NAME=SRC`` is a checkout's ``src`` directory (default: this one's), run with
``PYTHONPATH=SRC`` from the checkout's root; the checkouts take turns, ``--repeat`` rounds.

A run is ``segcompact run --once --verbose`` under a poller of /proc (every 0.2 s: the CPU of
each process of its tree and of each thread of its JVM, by kind), with the JVM's Flight Recorder
on (``spark.driver.extraJavaOptions`` in a ``spark-defaults.conf`` of its own; such a
``SPARK_CONF_DIR`` means no class archive, so the JVM loads its classes from the jars) and this
directory's ``steps_hook`` first on the PYTHONPATH (thread CPU in the decoder and in the segment
encoder, in every Python process). Its CPU, the whole tree's (below), goes to:

- ``start``: every process until the ``Spark session`` step of the debug log ends: JVM start,
  class loading, Spark and Delta start, the Python driver's imports.
- ``decode``: the decoder in the Python workers (CRC, decompression, Arrow columns).
- ``reduce``: the workers' CPU in the ``decode and reduce`` step less ``decode``: the reduction
  and the task's hand-over of its rows to the JVM.
- ``encode``: materialisation's segment encoder in the workers (the C encoder and the segment
  files it writes).
- ``mat. read``: the workers' CPU in materialisation's ``write`` step less ``encode``: delta-rs
  reading the state and young tables, the Arrow rows prepared for the encoder.
- ``JIT``, ``GC``: the JVM's compiler threads, its collector's threads and VM thread, after
  the session.
- the JVM's Java threads after the session (its CPU less ``JIT``, ``GC`` and the recorder's
  threads), shared by their Flight Recorder samples (Java threads in Java code, at a fixed
  interval): by their frames first (:data:`steps_probe.STACK_CLASSES`), else by the innermost
  step of the debug log around them:
  - ``commit``: a Delta commit (its log entry, its checkpoint);
  - ``write``: Parquet and Delta data files written;
  - ``merge``: Delta's MERGE, or a sample during a step that writes a table (:data:`MERGE_STEPS`:
    the state's MERGE or append, the partitions table's MERGE after a batch and after
    materialisation, the other tables' writes);
  - ``scan (JVM)``: the exchange of rows with the Python workers, or a sample during
    ``decode and reduce``: the JVM taking the workers' rows, holding them for the batch's
    later jobs, the batch's figures;
  - ``tables``: a sample during the ``tables`` step (opening, here creating, the five tables).
- ``other``: the rest: the JVM's other Java samples (the query's start, Spark's planning and
  scheduling between the steps), the Python driver after the session, the workers outside the
  two steps, the recorder's own threads, other processes.

The whole tree's CPU is the larger of the kernel's count (the children's ``RUSAGE_CHILDREN``)
and the polled one (the last figure of every process seen): each misses something (the kernel's
a process reaped without a wait, as the workers of PySpark's daemon, which ignores SIGCHLD;
the polled one a process that starts and ends between two polls).
Per code, each row's median over the runs; its percent is of the sum of the medians (which sum
to 100). Nothing here asserts a time.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.benchmarks import options
from tests.benchmarks.cleaner import segcompact_config
from tests.benchmarks.steps_probe import (
    Run,
    hook_seconds,
    run_tree,
    sample_class,
    samples,
    spans,
)
from tests.e2e.harness import cli_env
from tests.support.jvm import REPO_ROOT
from tests.support.keyed_log import MiB

STEPS = (
    "start",
    "tables",
    "decode",
    "reduce",
    "scan (JVM)",
    "merge",
    "commit",
    "write",
    "encode",
    "mat. read",
    "JIT",
    "GC",
    "other",
)
# What ``other`` holds: the JVM's Java samples of no step, the Python driver after the session,
# the workers outside the two steps, the recorder's threads, the rest (other processes, and
# where the kernel's count of the tree is the larger, what polling missed); then the JVM's part
# again by the innermost step of the debug log around its samples ("JVM in <step>").
OTHER = ("JVM", "driver", "workers", "recorder", "rest")
HOOK = Path(__file__).parent / "steps_hook"
DEFAULT_LOG = Path(tempfile.gettempdir()) / "segcompact-cleaner" / "run" / "kafka" / "raw"
# Steps that write a table: the JVM's samples meanwhile are the merge's.
MERGE_STEPS = (
    "state MERGE",
    "partitions MERGE",
    "state append",
    "young append",
    "ledger write",
    "pending write",
    "tombstones?",
    "materialise: record",
)
# The other steps whose JVM samples have a row, and the row.
SPAN_STEPS = {"decode and reduce": "scan (JVM)", "tables": "tables"}
JAVA_ROWS = ("tables", "scan (JVM)", "merge", "commit", "write")


def java_class(frames: Sequence[str], around: str | None) -> str:
    """A JVM sample's row by its frames, else by the innermost step around it, else other."""
    by_stack = sample_class(frames)
    if by_stack == "exchange":
        return "scan (JVM)"
    if by_stack is not None:
        return by_stack
    if around in MERGE_STEPS:
        return "merge"
    return SPAN_STEPS.get(around or "", "other")


def attribute(
    run: Run, log_text: str, hooks: dict[str, float], jfr: list[Any]
) -> tuple[float, dict[str, float], dict[str, float]]:
    """The run's whole CPU, its CPU seconds by step (:data:`STEPS`), which sum to it, and what
    ``other`` holds (:data:`OTHER`)."""
    timed = spans(log_text)
    session = [end for step, _, end in timed if step == "Spark session"]
    if not session:
        raise AssertionError("no 'Spark session' step in the run's debug log")
    ready = session[0]
    procs, threads = run.processes, run.threads
    whole = max(run.cpu_s, sum(procs.cpu[-1].values()))
    out = dict.fromkeys(STEPS, 0.0)
    out["start"] = procs.total_at(ready)

    def of(step: str) -> list[tuple[float, float]]:
        return [(s, e) for name, s, e in timed if name == step]

    out["decode"] = hooks.get("decode", 0.0)
    scan = procs.within("workers", of("decode and reduce"))
    out["reduce"] = max(0.0, scan - out["decode"])
    out["encode"] = hooks.get("encode", 0.0)
    materialise = procs.within(
        "workers", [(s, e) for name, s, e in timed if name.endswith("partitions: write")]
    )
    out["mat. read"] = max(0.0, materialise - out["encode"])

    def after(series: Any, kind: str) -> float:
        return max(0.0, series.cpu[-1].get(kind, 0.0) - series.at(ready, kind))

    out["JIT"] = after(threads, "jit")
    out["GC"] = after(threads, "gc")
    java = max(0.0, after(procs, "jvm") - out["JIT"] - out["GC"] - after(threads, "jfr"))
    counts: dict[str, int] = defaultdict(int)
    unclassed: dict[str, int] = defaultdict(int)  # by the innermost step around them
    for sample in jfr:
        if sample.time < ready:
            continue
        around = [(s, name) for name, s, e in timed if s <= sample.time <= e]
        step = max(around)[1] if around else None
        kind = java_class(sample.frames, step)
        counts[kind] += 1
        if kind == "other":
            unclassed[step or "(no step)"] += 1
    total = sum(counts.values())
    for kind in JAVA_ROWS:
        out[kind] = java * counts[kind] / total if total else 0.0
    out["other"] = whole - sum(v for k, v in out.items() if k != "other")
    parts = {
        "JVM": java * counts["other"] / total if total else java,
        "driver": after(procs, "driver"),
        "workers": max(0.0, after(procs, "workers") - scan - materialise),
        "recorder": after(threads, "jfr"),
    }
    parts["rest"] = out["other"] - sum(parts.values())
    for step, n in unclassed.items():  # the JVM's part, by step: not summed above
        parts[f"JVM in {step}"] = java * n / total
    return whole, out, parts


def measure(name: str, src: Path, config: Path, folder: Path, spark_conf: Path) -> dict[str, Any]:
    """One run of ``src``'s ``segcompact run --once`` on ``config``: its steps and figures."""
    hooks = folder / "hooks"
    hooks.mkdir(parents=True)
    recording = folder / "driver.jfr"
    conf = spark_conf / name
    conf.mkdir(parents=True, exist_ok=True)
    recorder = f"-XX:StartFlightRecording=filename={recording},settings=profile,dumponexit=true"
    (conf / "spark-defaults.conf").write_text(f"spark.driver.extraJavaOptions {recorder}\n")
    env = cli_env(conf)
    env["PYTHONPATH"] = os.pathsep.join([str(HOOK), str(src)])
    env["SEGCOMPACT_STEPS_DIR"] = str(hooks)
    env["XDG_CACHE_HOME"] = str(folder / "cache")
    argv = [sys.executable, "-m", "segcompact.cli", "run", "--once", "--verbose"]
    load = os.getloadavg()[0]
    log = folder / "run.log"
    run = run_tree([*argv, "--config", str(config)], cwd=src.parent, env=env, log=log)
    text = log.read_text(errors="replace")
    if run.exit_code != 0:
        raise AssertionError(f"{name}: run --once failed, see {log}:\n{text[-3000:]}")
    jfr = samples(recording) if recording.exists() else []
    whole, steps, other = attribute(run, text, hook_seconds(hooks), jfr)
    return {
        "cpu_s": whole,
        "kernel_cpu_s": run.cpu_s,
        "polled_cpu_s": sum(run.processes.cpu[-1].values()),
        "wall_s": run.wall_s,
        "steps": steps,
        "other": other,
        "jfr_samples": len(jfr),
        "load_average": [load, os.getloadavg()[0]],
        "folder": str(folder),
    }


def _commit(src: Path) -> str | None:
    """The commit a checkout is at (None outside git)."""
    done = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or None


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each step's median over the runs, and its percent of the sum of the medians."""
    medians = {s: statistics.median(r["steps"][s] for r in runs) for s in STEPS}
    parts = sorted({p for r in runs for p in r["other"]}, key=lambda p: (p not in OTHER, p))
    whole = sum(medians.values())
    return {
        "cpu_s": medians,
        "other": {p: statistics.median(r["other"].get(p, 0.0) for r in runs) for p in parts},
        "percent": {s: 100 * v / whole if whole else 0.0 for s, v in medians.items()},
        "total_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "cpu_s_runs": [r["cpu_s"] for r in runs],
    }


def report(out: dict[str, Any]) -> None:
    codes = list(out["codes"])
    log = out["log"]
    print(
        f"\nlog: {log['input_bytes'] / 1e6:,.1f} MB of rolled segments in {log['segments']} "
        f"files ({log['path']}); CPU seconds (percent of the whole process tree), median of "
        f"{out['repeat']} runs each"
    )
    print(f"  {'step':<10}" + "".join(f" {c:>18}" for c in codes))
    for step in STEPS:
        cells = [out["codes"][c]["summary"] for c in codes]
        line = "".join(f" {s['cpu_s'][step]:>8.2f} s ({s['percent'][step]:4.1f} %)" for s in cells)
        print(f"  {step:<10}{line}")
    cells = [out["codes"][c]["summary"] for c in codes]
    print(f"  {'sum':<10}" + "".join(f" {sum(s['cpu_s'].values()):>8.2f} s {'':>8}" for s in cells))
    for c in codes:
        s = out["codes"][c]["summary"]
        parts = ", ".join(f"{p} {v:.2f}" for p, v in s["other"].items() if v >= 0.05)
        print(f"  {c}: other holds (medians, CPU s) {parts}")
        runs = ", ".join(f"{x:.1f}" for x in s["cpu_s_runs"])
        print(
            f"  {c}: whole tree {runs} CPU s (median {s['total_cpu_s']:.1f}), "
            f"wall {s['wall_s']:.1f} s"
        )
    print(f"  commits: {out['commits']}")
    print(f"  load average: {' '.join(f'{x:.2f}' for x in out['load_average'])} (1/5/15 min)")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("steps", __doc__)
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG, help="the log dir to compact")
    parser.add_argument(
        "--segment-mib", type=float, default=16, help="the topic's segment size (16)"
    )
    parser.add_argument(
        "--code",
        action="append",
        metavar="NAME=SRC",
        help="a checkout's src directory, repeatable (default: this checkout's, as 'current')",
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each code (default 3)")
    options.add_workdir(parser, "steps", "each run's tables, log and recording (emptied first)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat >= 1")
    codes: dict[str, Path] = {}
    for item in args.code or [f"current={REPO_ROOT / 'src'}"]:
        name, sep, src = item.partition("=")
        if not sep or not name or not (Path(src) / "segcompact").is_dir():
            parser.error(f"--code {item}: want NAME=SRC, SRC a directory holding segcompact/")
        codes[name] = Path(src).resolve()
    # What run --once reads: rolled segments only, as Kafka's cleaner.
    inputs = [p for d in sorted(args.log.iterdir()) for p in sorted(d.glob("*.log"))[:-1]]
    if not inputs:
        parser.error(f"--log {args.log}: no segments (make bench-cleaner leaves its log there)")
    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    segment_bytes = int(args.segment_mib * MiB)
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in codes}
    commits = {c: _commit(src) for c, src in codes.items()}  # as the runs start
    for i in range(args.repeat):  # the codes take turns: the machine's load hits each alike
        for name, src in codes.items():
            folder = work / f"{name}-{i}"
            config = segcompact_config(folder, args.log, segment_bytes, None)
            print(f"  {name} ({src}): run --once, round {i + 1} of {args.repeat}")
            runs[name].append(measure(name, src, config, folder, work / "spark-conf"))
    out: dict[str, Any] = {
        "log": {
            "path": str(args.log),
            "segments": len(inputs),
            "input_bytes": sum(p.stat().st_size for p in inputs),
        },
        "repeat": args.repeat,
        "commits": commits,
        "codes": {
            c: {"src": str(codes[c]), "runs": r, "summary": summary(r)} for c, r in runs.items()
        },
        "load_average": os.getloadavg(),
    }
    report(out)
    options.write_json(args, out)
    return out


if __name__ == "__main__":
    main()
