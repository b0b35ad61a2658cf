"""What the benchmarks measure with: wall and CPU seconds of the whole process tree (the JVM and
Python workers included, read from /proc), the time spent in chosen methods, and a run's result.
Nothing here asserts a time."""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from segcompact.clock import CLOCK_VARIABLE
from segcompact.erasure.keyhash import SECRET_VARIABLE
from tests.e2e.harness import CLI, RUN_TIMEOUT_S, cli_env
from tests.support.jvm import REPO_ROOT

TICK = os.sysconf("SC_CLK_TCK")


def stat(path: str, *, own: bool = False) -> tuple[int, float]:
    """The parent and CPU seconds in a /proc ``stat`` file (a process's or a thread's): utime
    and stime, and with them the reaped children's cutime and cstime unless ``own``."""
    with open(path) as f:
        text = f.read()
    rest = text[text.rindex(")") + 2 :].split()
    return int(rest[1]), sum(int(x) for x in rest[11 : 13 if own else 15]) / TICK


def processes(own: bool = False) -> dict[int, tuple[int, float]]:
    """Every process's parent and CPU seconds (:func:`stat`), from /proc (empty where there is
    none)."""
    out: dict[int, tuple[int, float]] = {}
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return out
    for entry in entries:
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = stat(f"/proc/{entry.name}/stat", own=own)
            except OSError:
                continue  # gone meanwhile
    return out


def children_of(pid: int, found: dict[int, tuple[int, float]]) -> list[int]:
    """``pid``'s children among ``found`` (:func:`processes`)."""
    return [child for child, (ppid, _) in found.items() if ppid == pid]


def tree(roots: Iterable[int], found: dict[int, tuple[int, float]]) -> list[int]:
    """``roots`` and every process below them among ``found`` (:func:`processes`)."""
    children: dict[int, list[int]] = defaultdict(list)
    for child, (ppid, _) in found.items():
        children[ppid].append(child)
    out, todo = [], list(roots)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def subreaper(on: bool) -> None:
    """Make this process a child subreaper (or no longer one): a descendant whose parent exits
    without waiting for it (segcompact's Spark JVM, whose Python driver does not wait) is
    reparented here instead of to init."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (not itself)."""
    return tree([pid], processes())[1:]


def tree_cpu_seconds() -> float | None:
    """CPU seconds of this process and all its descendants (the JVM, Python workers), or None
    where /proc is missing. Reaped children count through their parent's cutime and cstime."""
    found = processes()
    if not found:
        return None
    return sum(found[p][1] for p in tree([os.getpid()], found) if p in found)


def busy_cpu_seconds() -> float | None:
    """CPU seconds the whole machine has been busy (``/proc/stat``), or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


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


class QueryProgress(StreamingQueryListener):
    """Each micro-batch's ``durationMs`` as the query reports it (add it with
    ``spark.streams.addListener``)."""

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


# --- A command's whole process tree ----------------------------------------------------------

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
POLL_S = 0.1  # how often reap polls the tree's CPU
STRAGGLERS_TIMEOUT_S = 120  # after the command exits, for what it left running


def reap(argv: Sequence[str]) -> int:
    """Run ``argv[1:]`` and wait for it and for every process it leaves behind; write its wall
    time and the CPU time of all of them to the JSON file ``argv[0]``; return its exit code.

    This process is a child subreaper: a descendant whose parent exits without waiting for it
    (segcompact's Spark JVM, whose Python driver does not wait) is reparented here instead of
    to init, and reaped, so its CPU time is in this process's ``RUSAGE_CHILDREN``. That count
    misses what no parent waits for: PySpark's daemon ignores ``SIGCHLD``, so the kernel reaps
    the Python workers it forks and their CPU reaches no one (1.2 to 2.8 CPU s of a
    ``run --once`` of 285 MB). So the tree is also polled from /proc every
    :data:`POLL_S`, each process's own CPU at its last poll; ``cpu_s`` is the larger of the two
    counts (both are at least what was spent), and both are written."""
    subreaper(True)
    began = time.perf_counter()
    polled: dict[int, float] = {}
    done = threading.Event()
    poller = threading.Thread(target=_poll_tree, args=(polled, done), daemon=True)
    poller.start()
    code = subprocess.call(argv[1:])
    exited = time.perf_counter()
    deadline, killed = exited + STRAGGLERS_TIMEOUT_S, 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break  # none left
        if pid:
            continue
        if time.perf_counter() > deadline:
            for child in children_of(os.getpid(), processes()):
                os.kill(child, signal.SIGKILL)
                killed += 1
            deadline = float("inf")
        time.sleep(0.02)
    done.set()
    poller.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    kernel = usage.ru_utime + usage.ru_stime
    figures = {
        "exit_code": code,
        "wall_s": exited - began,  # until the command exits: what its user waits for
        "tree_wall_s": time.perf_counter() - began,  # until the last process it started
        "cpu_s": max(kernel, sum(polled.values())),
        "kernel_cpu_s": kernel,
        "polled_cpu_s": sum(polled.values()),
        "user_cpu_s": usage.ru_utime,
        "max_rss_mib": usage.ru_maxrss / 1024,
        "stragglers_killed": killed,
    }
    Path(argv[0]).write_text(json.dumps(figures), encoding="utf-8")
    return code


def _poll_tree(polled: dict[int, float], done: threading.Event) -> None:
    """Until ``done``: each descendant's own CPU seconds (utime + stime), as last seen."""
    me = os.getpid()
    while True:
        finished = done.is_set()
        found = processes(own=True)
        for pid in tree([me], found)[1:]:
            polled[pid] = found[pid][1]
        if finished:
            return
        done.wait(POLL_S)


REAP = "import sys; from tests.benchmarks.measure import reap; sys.exit(reap(sys.argv[1:]))"


def reaped(
    argv: Sequence[str | Path],
    work: Path,
    spark_conf_dir: Path,
    *,
    cwd: Path | None = None,
    secret: str | None = None,
    clock_ms: int | None = None,
    timeout_s: float = RUN_TIMEOUT_S,
) -> dict[str, Any]:
    """``argv`` under :func:`reap` (in ``cwd``, else ``work``), its stdout and stderr in
    ``work``; its figures. It must succeed within ``timeout_s``. ``secret``: the ledger's, in
    its environment; ``clock_ms``: the time its commands' clock is pinned at (else the
    system's)."""
    work.mkdir(parents=True, exist_ok=True)
    figures = work / "figures.json"
    env = cli_env(spark_conf_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    if secret is not None:
        env[SECRET_VARIABLE] = secret
    if clock_ms is not None:
        env[CLOCK_VARIABLE] = str(clock_ms)
    with open(work / "stdout.txt", "wb") as out, open(work / "stderr.txt", "wb") as err:
        subprocess.run(
            [sys.executable, "-c", REAP, figures, *argv],
            cwd=cwd or work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            timeout=timeout_s,
            check=False,
        )
    if not figures.exists() or json.loads(figures.read_text())["exit_code"] != 0:
        stderr = (work / "stderr.txt").read_text(errors="replace")
        raise AssertionError(f"{' '.join(map(str, argv))} failed in {work}:\n{stderr[-3000:]}")
    result: dict[str, Any] = json.loads(figures.read_text())
    return result


def run_once(config: Path, work: Path, spark_conf_dir: Path, *extra: str) -> dict[str, Any]:
    """``segcompact run --once [extra...]`` under :func:`reap`: its figures."""
    return reaped([*CLI, "run", "--once", "--config", config, *extra], work, spark_conf_dir)
