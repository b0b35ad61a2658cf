"""Memory: one large segment, and segments of tiny records, through ``segcompact run --once``,
each process's peak RSS.

    python -m tests.benchmarks.memory [--cases large,tiny-gzip,tiny-zstd,tiny-v1]
        [--size-mib 1024] [--keys 1000000] [--tiny-records 24000000] [--v1-records 4000000]
        [--workdir D]

- ``large``: one partition holding one segment of about ``--size-mib`` MiB (Kafka's default
  ``segment.bytes`` is 1 GiB) of lz4 batches, ``--keys`` keys updated many times, 5 %
  tombstones (``tests/support/column_log.py``).
- ``tiny-gzip``, ``tiny-zstd``: one segment of ``--tiny-records`` records of a 4-byte key (1000
  keys) and an 8-byte value, in v2 batches of 4 M records each, compressed whole
  (``tests/support/tiny_log.py``): memory bounded by records, not bytes.
- ``tiny-v1``: ``--v1-records`` such records as magic-1 gzip wrappers of 1 M inner messages
  each (legacy records are read in Python: some 5 µs each).

Each log is generated once and cached under ``--workdir``. Then ``segcompact run --once`` on
it, as a user runs it (fresh tables, Spark's defaults), while this process reads every 0.1 s
the peak resident set (``VmHWM``) of each of the run's processes from /proc: the Python driver,
the JVM, and each Python worker (the segment is decoded and reduced in one of them). The
issue's target: no Python worker above 512 MiB. Nothing here asserts a size.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from segcompact.format.attributes import Compression
from tests.benchmarks import options
from tests.benchmarks.measure import REAP, descendants, run_once
from tests.support import column_log, tiny_log
from tests.support.config import write_config
from tests.support.keyed_log import BASE_TIMESTAMP, TOPIC, MiB

FORMAT_VERSION = 1  # bump when generation changes, to invalidate cached logs
SAMPLE_RECORDS = 100_000  # to size the segment from
CASES = ("large", "tiny-gzip", "tiny-zstd", "tiny-v1")
TINY_KEYS = 1000
TINY_BATCH_RECORDS = {"tiny-gzip": 4_000_000, "tiny-zstd": 4_000_000, "tiny-v1": 1_000_000}


def _rows(n: int, first: int, keys: int, rng: np.random.Generator, pool: Any) -> Any:
    offsets = np.arange(first, first + n, dtype=np.int64)
    return column_log.rows(
        offsets, rng.integers(0, keys, n), rng.random(n) < 0.05, pool, rng, BASE_TIMESTAMP
    )


def generate(workdir: Path, size_mib: float, keys: int, seed: int) -> dict[str, Any]:
    """The cached log for these parameters (one partition), generated if missing."""
    where = workdir / f"memory-{size_mib:g}MiB-{keys}k-s{seed}-v{FORMAT_VERSION}"
    meta = where / "meta.json"
    if meta.exists():
        return {**json.loads(meta.read_text()), "cached": True}
    shutil.rmtree(where, ignore_errors=True)
    began = time.perf_counter()
    rng = np.random.default_rng(seed)
    pool = column_log.value_pool(random.Random(seed))
    sample = column_log.write(where / "sample", _rows(SAMPLE_RECORDS, 0, keys, rng, pool))
    per_record = sum(s.size for s in sample) / SAMPLE_RECORDS
    records = int(size_mib * MiB / per_record * 0.99)  # one segment: below segment.bytes
    directory = where / "logs" / f"{TOPIC}-0"
    written = column_log.write(
        directory, _rows(records, 0, keys, rng, pool), segment_bytes=int(size_mib * MiB)
    )
    shutil.rmtree(where / "sample")
    info = {
        "root": str(where / "logs"),
        "segments": len(written),
        "largest_segment_bytes": max(s.size for s in written),
        "file_bytes": sum(s.size for s in written),
        "records": records,
        "keys": keys,
        "generate_seconds": time.perf_counter() - began,
    }
    meta.write_text(json.dumps(info))
    return {**info, "cached": False}


def generate_tiny(workdir: Path, case: str, records: int) -> dict[str, Any]:
    """The cached segment of ``records`` tiny records for ``case``, generated if missing."""
    where = workdir / f"memory-{case}-{records}-v{FORMAT_VERSION}"
    meta = where / "meta.json"
    if meta.exists():
        return {**json.loads(meta.read_text()), "cached": True}
    shutil.rmtree(where, ignore_errors=True)
    began = time.perf_counter()
    step = TINY_BATCH_RECORDS[case]
    if case == "tiny-v1":
        batches = (
            tiny_log.v1_wrapper(first, min(step, records - first), Compression.GZIP, keys=TINY_KEYS)
            for first in range(0, records, step)
        )
    else:
        codec = Compression.GZIP if case == "tiny-gzip" else Compression.ZSTD
        batches = (
            tiny_log.v2_batch(first, min(step, records - first), codec, keys=TINY_KEYS)
            for first in range(0, records, step)
        )
    path = tiny_log.write_segment(where / "logs" / f"{TOPIC}-0", 0, batches)
    info = {
        "root": str(where / "logs"),
        "segments": 1,
        "largest_segment_bytes": path.stat().st_size,
        "file_bytes": path.stat().st_size,
        "records": records,
        "keys": TINY_KEYS,
        "generate_seconds": time.perf_counter() - began,
    }
    meta.write_text(json.dumps(info))
    return {**info, "cached": False}


def _role(cmdline: str) -> str | None:
    if REAP in cmdline:
        return None  # run_once's reaper, not segcompact
    if "pyspark.daemon" in cmdline or "pyspark.worker" in cmdline:
        return "python worker"
    if "java" in cmdline.split("\0", 1)[0]:
        return "jvm"
    if "segcompact.cli" in cmdline:
        return "python driver"
    return None


class PeakRss(threading.Thread):
    """The peak RSS (``VmHWM``, MiB) of every descendant of this process of the roles above, by
    pid (the run's JVM too: the reaper of :func:`run_once` adopts it)."""

    def __init__(self, period_s: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.period_s = period_s
        self.peaks: dict[int, tuple[str, float]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.period_s):
            for pid in descendants(os.getpid()):
                try:
                    with open(f"/proc/{pid}/cmdline") as f:
                        role = _role(f.read())
                    if role is None:
                        continue
                    with open(f"/proc/{pid}/status") as f:
                        hwm = next(line for line in f if line.startswith("VmHWM:"))
                except (OSError, StopIteration):
                    continue  # gone meanwhile
                mib = int(hwm.split()[1]) / 1024
                if mib > self.peaks.get(pid, ("", 0.0))[1]:
                    self.peaks[pid] = (role, mib)

    def by_role(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for role, mib in self.peaks.values():
            r = out.setdefault(role, {"processes": 0, "max_mib": 0.0})
            r["processes"] += 1
            r["max_mib"] = max(r["max_mib"], mib)
        return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("memory", __doc__)
    parser.add_argument("--size-mib", type=float, default=1024, help="segment size (1024)")
    parser.add_argument("--keys", type=int, default=1_000_000, help="distinct keys (1000000)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)} (all)"
    )
    parser.add_argument(
        "--tiny-records", type=int, default=24_000_000, help="records of tiny-gzip, tiny-zstd"
    )
    parser.add_argument("--v1-records", type=int, default=4_000_000, help="records of tiny-v1")
    options.add_workdir(
        parser,
        "memory",
        "generated logs are cached here; tables, checkpoint and logs go to <workdir>/run",
    )
    options.add_spark_conf_dir(parser)
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)} (valid: {', '.join(CASES)})")

    args.workdir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    for case in cases:
        if case == "large":
            log = generate(args.workdir, args.size_mib, args.keys, args.seed)
        else:
            records = args.v1_records if case == "tiny-v1" else args.tiny_records
            log = generate_tiny(args.workdir, case, records)
        out[case] = _measure(args, log)
        _print(case, out[case])
    options.write_json(args, out)
    return out


def _measure(args: Any, log: dict[str, Any]) -> dict[str, Any]:
    """``run --once`` on ``log``, with the peak RSS of each kind of process."""
    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    spark_conf_dir = options.spark_conf_dir(args, work)
    config = write_config(work / "job", [log["root"]], rolled_only=False)
    peaks = PeakRss()
    peaks.start()
    try:
        with options.own_cache(work):
            figures = run_once(config, work, spark_conf_dir)
    finally:
        peaks.stop.set()
        peaks.join()
    return {"log": log, "run": figures, "peak_rss": peaks.by_role()}


def _print(case: str, out: dict[str, Any]) -> None:
    log, figures = out["log"], out["run"]
    print(
        f"\nmemory ({case}): one segment of {log['largest_segment_bytes'] / MiB:,.1f} MiB, "
        f"{log['records']:,} records, {log['keys']:,} keys; run --once in "
        f"{figures['wall_s']:.0f} s ({figures['cpu_s']:.0f} CPU s)"
    )
    for role, r in sorted(out["peak_rss"].items()):
        print(f"  {role:<14} peak RSS {r['max_mib']:7,.0f} MiB ({r['processes']:.0f} processes)")
    worker = out["peak_rss"].get("python worker", {}).get("max_mib")
    if worker is not None:
        print(f"  target: a Python worker under 512 MiB: {worker / 512:.2f} of it")


if __name__ == "__main__":
    main()
