"""What the benchmarks measure with: wall and CPU seconds of the whole process tree (the JVM and
Python workers included, read from /proc), the time spent in chosen methods, and a run's result.
Nothing here asserts a time."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any


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
