"""What one measured ``segcompact run --once`` leaves to attribute its CPU by step: the CPU of
its process tree by kind of process (and of the JVM's threads by kind) polled from /proc over
time, the step spans of its debug log, the JVM's Flight Recorder samples, the in-worker timers
of ``steps_hook``. Nothing here asserts a time."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tests.benchmarks.measure import children_of, processes, stat, subreaper, tree
from tests.support.jvm import java_executable

POLL_S = 0.2


def _read(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace")


def process_kind(cmdline: str, pid: int, driver: int) -> str:
    """``jvm`` (Spark's driver JVM), ``launcher`` (Spark's launcher JVM), ``driver`` (the
    ``segcompact`` Python process), ``workers`` (PySpark's daemon and workers), ``other``."""
    program = cmdline.split(" ", 1)[0]
    if program.endswith("java"):
        return "jvm" if "SparkSubmit" in cmdline else "launcher"
    if pid == driver:
        return "driver"
    return "workers" if "pyspark" in cmdline else "other"


def thread_kind(comm: str) -> str:
    """A JVM thread's kind by its name: ``jit``, ``gc`` (the collector's threads and the VM
    thread, which runs the collections and the other safepoint operations), ``jfr`` (the
    recorder's own), ``java``."""
    if "CompilerThre" in comm:
        return "jit"
    if comm.startswith(("GC Thread", "G1 ", "VM Thread", "ParGC")):
        return "gc"
    return "jfr" if comm.startswith("JFR") else "java"


@dataclass(slots=True)
class Series:
    """Cumulative CPU seconds by kind at each poll (wall-clock times, epoch seconds); a process or
    thread that ended counts with its last polled figure."""

    times: list[float] = field(default_factory=list)
    cpu: list[dict[str, float]] = field(default_factory=list)

    def at(self, t: float, kind: str) -> float:
        """``kind``'s CPU at the first poll at or after ``t`` (the last one after the end)."""
        for when, cpu in zip(self.times, self.cpu, strict=True):
            if when >= t:
                return cpu.get(kind, 0.0)
        return self.cpu[-1].get(kind, 0.0) if self.cpu else 0.0

    def total_at(self, t: float) -> float:
        for when, cpu in zip(self.times, self.cpu, strict=True):
            if when >= t:
                return sum(cpu.values())
        return sum(self.cpu[-1].values()) if self.cpu else 0.0

    def within(self, kind: str, spans: Iterable[tuple[float, float]]) -> float:
        """``kind``'s CPU in the spans: each poll interval's, shared in proportion of its time
        inside them."""
        out = 0.0
        spans = list(spans)
        for i in range(1, len(self.times)):
            a, b = self.times[i - 1], self.times[i]
            spent = self.cpu[i].get(kind, 0.0) - self.cpu[i - 1].get(kind, 0.0)
            if spent <= 0 or b <= a:
                continue
            inside = sum(max(0.0, min(b, e) - max(a, s)) for s, e in spans)
            out += spent * min(1.0, inside / (b - a))
        return out


@dataclass(slots=True)
class Run:
    exit_code: int
    cpu_s: float  # the whole tree's, from the kernel (RUSAGE_CHILDREN)
    wall_s: float
    processes: Series  # by process kind
    threads: Series  # the JVM's threads by kind


def run_tree(argv: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path) -> Run:
    """``argv`` with this process a child subreaper while it runs (segcompact's JVM outlives its
    Python driver and is reparented here), polled every :data:`POLL_S` until the last process
    of its tree exits. The caller must start no other child meanwhile: the tree's kernel count
    is this process's ``RUSAGE_CHILDREN`` growth."""
    subreaper(True)
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        others = set(children_of(os.getpid(), processes()))  # this process's own, left alone
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
            )
            code, by_process, threads = _poll(proc.pid, others)
            proc.returncode = code  # reaped here
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        subreaper(False)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Run(code, cpu, time.perf_counter() - began, by_process, threads)


def _poll(driver: int, others: set[int]) -> tuple[int, Series, Series]:
    """The tree of ``driver``, a child of this process, polled until its last process exits
    (what is reparented here from it included; this process's ``others`` children are left
    alone): the driver's exit code and the series by process and by JVM thread."""
    me = os.getpid()
    seen: dict[int, tuple[str, float]] = {}
    threads: dict[int, tuple[str, float]] = {}
    processes_series, threads_series = Series(), Series()
    code: int | None = None
    while True:
        found = processes(own=True)
        ours = [p for p in children_of(me, found) if p not in others]
        for pid in tree(ours, found):
            try:
                cmdline = _read(f"/proc/{pid}/cmdline")
                # A process that has exited (a zombie) shows none: it keeps its kind.
                kind = process_kind(cmdline, pid, driver) if cmdline else seen[pid][0]
                seen[pid] = (kind, found[pid][1])
                if kind == "jvm":
                    _poll_threads(pid, threads)
            except (OSError, KeyError):
                continue  # ended meanwhile, or first seen as a zombie
        now = time.time()
        processes_series.times.append(now)
        processes_series.cpu.append(_by_kind(seen.values()))
        threads_series.times.append(now)
        threads_series.cpu.append(_by_kind(threads.values()))
        for pid in ours:  # reap what exited, the reparented JVM included
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done == driver:
                code = os.waitstatus_to_exitcode(status)
        if code is not None and not set(children_of(me, processes())) - others:
            return code, processes_series, threads_series
        time.sleep(POLL_S)


def _by_kind(values: Iterable[tuple[str, float]]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for kind, cpu in values:
        out[kind] += cpu
    return dict(out)


def _poll_threads(pid: int, threads: dict[int, tuple[str, float]]) -> None:
    try:
        tasks = list(os.scandir(f"/proc/{pid}/task"))
    except OSError:
        return
    for task in tasks:
        try:
            comm = _read(f"{task.path}/comm").strip()
            threads[int(task.name)] = (thread_kind(comm), stat(f"{task.path}/stat", own=True)[1])
        except OSError:
            continue


# --- The job's debug log ---------------------------------------------------------------------

# segcompact.timing.timed's line: "<ISO time> segcompact: <logger>: <step>: <seconds> s"
_SPAN = re.compile(r"^(\S+Z) segcompact: \S+: (.+): (\d+(?:\.\d+)?) s$")


def spans(text: str) -> list[tuple[str, float, float]]:
    """Every timed step of the log as (step, start, end), epoch seconds (its end is the line's
    time, to the millisecond; its length is to a tenth of a second)."""
    out = []
    for line in text.splitlines():
        m = _SPAN.match(line)
        if m:
            end = datetime.fromisoformat(m.group(1)).timestamp()
            out.append((m.group(2), end - float(m.group(3)), end))
    return out


def hook_seconds(directory: Path) -> dict[str, float]:
    """The in-worker timers' sums by step (``steps_hook``)."""
    out: dict[str, float] = defaultdict(float)
    for path in directory.glob("*.tsv"):
        for line in path.read_text().splitlines():
            step, seconds = line.split("\t")
            out[step] += float(seconds)
    return dict(out)


# --- Java Flight Recorder --------------------------------------------------------------------

# A sample's class by its frames, the first that matches winning: a Delta commit's own Parquet
# (its checkpoint) is the commit's.
STACK_CLASSES = (
    ("commit", ("OptimisticTransactionImpl.commit", "OptimisticTransaction.commit", "Checkpoints")),
    ("write", ("FileFormatWriter", "parquet.hadoop.ParquetWriter", "ParquetOutputWriter")),
    ("exchange", ("org.apache.spark.api.python.", "sql.execution.python.")),
    ("merge", ("MergeIntoCommand", "commands.merge.")),
)
# The date is printed only where it is not the recording's.
_SAMPLE_TIME = re.compile(r"startTime = (\d\d:\d\d:\d\d\.\d+)(?: \((\d{4}-\d\d-\d\d)\))?")


@dataclass(frozen=True, slots=True)
class Sample:
    time: float  # epoch seconds
    frames: tuple[str, ...]  # innermost first


def samples(jfr_file: Path) -> list[Sample]:
    """The recording's Java execution samples (``jfr print``; its times are in the local time
    zone, as this process reads them, the date the file's where it prints none)."""
    day = datetime.fromtimestamp(jfr_file.stat().st_mtime).date().isoformat()
    text = subprocess.run(
        [
            jfr_tool(),
            "print",
            "--events",
            "jdk.ExecutionSample",
            "--stack-depth",
            "64",
            str(jfr_file),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out = []
    for event in text.split("jdk.ExecutionSample {")[1:]:
        m = _SAMPLE_TIME.search(event)
        if not m:
            continue
        when = datetime.fromisoformat(f"{m.group(2) or day}T{m.group(1)}").timestamp()
        if m.group(2) is None and when > jfr_file.stat().st_mtime + 1:
            when -= 24 * 3600  # recorded the day before it was written
        start = event.find("stackTrace = [")
        frames = tuple(line.strip() for line in event[start:].splitlines()[1:] if line.strip())
        out.append(Sample(when, frames))
    return out


def jfr_tool() -> str:
    """The JDK's ``jfr`` beside the ``java`` that Spark runs (``JAVA_HOME``'s, else PATH's)."""
    tool = Path(os.path.realpath(java_executable())).parent / "jfr"
    if not tool.is_file():
        raise AssertionError(f"no jfr beside {java_executable()}: the steps need a JDK, not a JRE")
    return str(tool)


def sample_class(frames: Sequence[str]) -> str | None:
    """The class of :data:`STACK_CLASSES` a sample's frames name, or None."""
    for name, marks in STACK_CLASSES:
        if any(mark in frame for frame in frames for mark in marks):
            return name
    return None
