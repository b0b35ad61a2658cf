"""Soak of the deletion SLA: the continuous job on the real clock, fed for minutes, every
erasure's time against ``gdpr.deletion.sla.ms``.

    python -m tests.benchmarks.soak_sla --minutes 5 --sla-ms 60000 [--workdir D] [--seed N]
        [--json]                               (or: make soak)

In a work dir (a fresh temp dir, removed after a clean run and kept otherwise; ``--workdir``
keeps it), a config gives topic ``users`` the SLA with every wait at a quarter of it or less
(``trigger_interval`` 2 s, ``materialize_check_interval_ms`` 5 s, ``deleted_file_retention_ms``
5 s) and a ``delete.retention.ms`` that outlives the run (no tombstone expires). Then:

- ``segcompact run --config F --verbose`` starts in the background (``tests/e2e/harness.py``'s
  ``Background``: its own process group, stdout and stderr in ``background.out`` / ``.err``
  in the work dir, each batch's and upkeep's step timings among the latter), with a random
  ``SEGCOMPACT_LEDGER_SECRET``;
- once its streaming query has started, for ``--minutes`` this process appends a segment every
  1-3 s to one of 2 partitions: a batch of 20-60 records over a pool of ``--keys`` keys
  (``user-<i>``, in partition i % 2), ``--delete-fraction`` of them tombstones, the others new
  values (overwrites once a key has one), timestamps the wall clock's, offsets dense. A segment
  is written beside the log dir and renamed into it, ``.log`` last, so the job never reads a
  half-written file;
- the job keeps running until the last append + SLA + 30 s, so every deadline has passed and its
  upkeep could finish every round, then gets SIGTERM (exit code 0 expected);
- ``segcompact sla --format json``: deletions total / met / breached / pending, overwrite rounds
  (one ledger row per round and partition) met / breached / pending, time to erasure of the
  deletions (``completed_at - appended_at``: p50, p99, max) against the SLA, each stage's time
  after the append (p50, max), and every breach with its ``breach_stage``;
- from the checkpoint: the micro-batches committed, each one's time from plan to commit (waits
  for the upkeep included) and whether every segment produced was read;
- ``segcompact verify-erasure --format json`` for 3 keys whose last record is a tombstone: each
  must be erased (exit code 0).

CPU seconds are the job's process tree (the JVM and Python workers included) up to the SIGTERM,
read from /proc (``tests/benchmarks/measure.py``), beside what every other process on the
machine used meanwhile (a shared machine slows the job down). The ledger holds one delete row
per key and micro-batch (the winning tombstone), so it may count fewer deletions than were
produced.

The report goes to stdout; with ``--json`` stdout holds one JSON object instead and the report
goes to stderr. Nothing here asserts a time, but the exit code is 1 when a deletion or round
breached, a key was not erased, a segment was never read, or the job or a command failed, so
that a human sees it.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import string
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from segcompact.config import load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE, key_hash
from segcompact.erasure.schedule import STAGES, percentile
from segcompact.errors import SegcompactError
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from tests.benchmarks import options
from tests.benchmarks.measure import busy_cpu_seconds, tree_cpu_seconds
from tests.e2e.harness import Background, Checkpoint, run_cli, wait_for
from tests.support.config import write_config

TOPIC = "users"
PARTITIONS = 2
MARGIN_S = 30  # after the last deadline, before the SIGTERM
VERIFIED_KEYS = 3


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _between(start: str, end: str) -> int:
    """Milliseconds from one ISO time of the SLA report to another."""
    return round(
        (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() * 1000
    )


# --- the input ---------------------------------------------------------------------------------


class Producer:
    """Appends one-batch segments to the partitions of :data:`TOPIC` under ``root``."""

    def __init__(self, root: Path, staging: Path, rnd: random.Random, keys: int, deletes: float):
        self.root = root
        self.staging = staging
        self.rnd = rnd
        self.delete_fraction = deletes
        self.keys = [
            [f"user-{i}" for i in range(keys) if i % PARTITIONS == p] for p in range(PARTITIONS)
        ]
        self.next_offset = [0] * PARTITIONS
        self.last: dict[tuple[int, str], bytes | None] = {}  # (partition, key): last value
        self.counts: Counter[str] = Counter()
        self.last_append_ms: int | None = None

    def append(self) -> None:
        p = self.rnd.randrange(PARTITIONS)
        base = self.next_offset[p]
        now = _now_ms()
        records = []
        for offset in range(base, base + self.rnd.randint(20, 60)):
            key = self.rnd.choice(self.keys[p])
            before = self.last.get((p, key))
            if self.rnd.random() < self.delete_fraction:
                value = None
                self.counts["deletes"] += 1
                self.counts["deletes of a live value" if before else "deletes of no value"] += 1
            else:
                value = f"{key}@example.com v{offset} {self.rnd.getrandbits(64):016x}".encode()
                self.counts["overwrites" if before else "first values"] += 1
            self.last[(p, key)] = value
            records.append(Record(offset, now, key.encode(), value, (), 0))
        self.next_offset[p] = base + len(records)
        name = f"{TOPIC}-{p}"
        SampleSegment(base, [build_batch(records)]).write(self.staging / name)
        # Published whole: the indexes first, the .log (what the source lists) last.
        target = self.root / name
        target.mkdir(parents=True, exist_ok=True)
        for f in sorted((self.staging / name).iterdir(), key=lambda f: f.suffix == ".log"):
            os.replace(f, target / f.name)
        self.counts["segments"] += 1
        self.counts["records"] += len(records)
        self.last_append_ms = now

    def deleted_keys(self, n: int) -> list[tuple[int, str]]:
        """``n`` (partition, key) whose last record is a tombstone, chosen at random."""
        gone = sorted(pk for pk, value in self.last.items() if value is None)
        return self.rnd.sample(gone, min(n, len(gone)))


# --- the figures -------------------------------------------------------------------------------


def _spread(values: Sequence[int]) -> dict[str, int | None]:
    return {
        "p50": percentile(values, 0.5),
        "p99": percentile(values, 0.99),
        "max": max(values, default=None),
    }


def figures(report: dict[str, Any], sla_ms: int) -> dict[str, Any]:
    """What the ``sla --format json`` report says about the run, summed over partitions."""
    deletions = report["deletions"]
    rounds = report["overwrites"]

    def statuses(rows: list[dict[str, Any]]) -> dict[str, int]:
        counts = Counter(r["status"] for r in rows)
        return {s: counts.get(s, 0) for s in ("met", "breached", "pending")}

    waits = [
        _between(d["appended_at"], d["completed_at"])
        for d in deletions
        if d["completed_at"] is not None
    ]
    after_append: dict[str, dict[str, int | None]] = {}
    for stage in STAGES:
        times = [
            _between(d["appended_at"], d["stages"][stage])
            for d in deletions
            if d["stages"].get(stage) is not None
        ]
        if times:
            after_append[stage] = {"n": len(times), **_spread(times)}
    round_work = [
        _between(r["stages"]["purged"], r["completed_at"])
        for r in rounds
        if r["completed_at"] is not None and r["stages"].get("purged") is not None
    ]
    round_waits = [
        _between(r["appended_from"], r["completed_at"])
        for r in rounds
        if r["completed_at"] is not None
    ]
    breaches = [
        {
            "what": f"offset {r['offset']}" if "offset" in r else f"round {r['round']}",
            "partition": f"{r['topic']}-{r['partition']}",
            "deadline": r["deadline"],
            "completed_at": r["completed_at"],
            "breach_stage": r["breach_stage"],
            "error": r.get("error"),
        }
        for r in (*deletions, *rounds)
        if r["status"] == "breached"
    ]
    return {
        "sla_ms": sla_ms,
        "deletions": {"total": len(deletions), **statuses(deletions)},
        "overwrite_rounds": {
            "total": len(rounds),
            "rounds": len({r["round"] for r in rounds}),
            **statuses(rounds),
        },
        "time_to_erasure_ms": {"n": len(waits), **_spread(waits)},
        "round_time_to_erasure_ms": {"n": len(round_waits), **_spread(round_waits)},
        "round_open_to_complete_ms": {"n": len(round_work), **_spread(round_work)},
        "stage_after_append_ms": after_append,
        "breaches": breaches,
        "breaches_by_stage": dict(Counter(b["breach_stage"] for b in breaches)),
    }


def micro_batches(checkpoint: Checkpoint) -> dict[str, Any]:
    """The query's committed micro-batches: how many, each one's time from its plan (the
    ``offsets`` file) to its commit, waits for the upkeep's lock included, and how many
    segments they read in all (the source's ``seq``)."""
    done = sorted(checkpoint.commits())
    seconds = [
        round(
            (checkpoint.folder / "commits" / str(n)).stat().st_mtime
            - (checkpoint.folder / "offsets" / str(n)).stat().st_mtime,
            1,
        )
        for n in done
    ]
    read = 0
    if done:
        lines = (checkpoint.folder / "offsets" / str(done[-1])).read_text().splitlines()
        read = int(json.loads(lines[-1]).get("seq", 0))
    return {
        "committed": len(done),
        "seconds_p50": percentile(seconds, 0.5),
        "seconds_max": max(seconds, default=None),
        "segments_read": read,
    }


# --- reporting ---------------------------------------------------------------------------------


def _s(ms: int | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def human(out: dict[str, Any], file: TextIO) -> None:
    def say(line: str = "") -> None:
        print(line, file=file)

    run, produced, f = out["run"], out["produced"], out.get("figures")
    sla = out["sla_ms"]
    say(
        f"\nsoak: {run['minutes']} min of input, SLA {_s(sla)}, wall {run['wall_s']:.0f} s "
        f"(job start {run['startup_s']:.0f} s, produce {run['produce_s']:.0f} s, hold "
        f"{run['hold_s']:.0f} s, stop {run['stop_s']:.0f} s, reports {run['report_s']:.0f} s)"
    )
    say(
        f"  produced: {produced['segments']} segments, {produced['records']} records; "
        f"{produced['deletes']} deletes ({produced['deletes of a live value']} of a live value), "
        f"{produced['overwrites']} overwrites, {produced['first values']} first values"
    )
    cpu, other = run["job_cpu_s"], run["other_cpu_s"]
    say(
        f"  job: exit code {run['job_exit']}, CPU {'-' if cpu is None else f'{cpu:.0f}'} s "
        f"(process tree, to SIGTERM); other processes on the machine meanwhile "
        f"{'-' if other is None else f'{other:.0f}'} s CPU; {run['cores']} cores, load average "
        f"{run['load_before']} at the start, "
        f"{run['load_average']} at the SIGTERM (1/5/15 min)"
    )
    b = run["micro_batches"]
    say(
        f"  micro-batches: {b['committed']} committed, plan to commit p50 {b['seconds_p50']} s, "
        f"max {b['seconds_max']} s (trigger every 2 s); {b['segments_read']} of "
        f"{produced['segments']} segments read"
    )
    if f is None:
        say(f"  no SLA report: {out.get('sla_error')}")
    else:
        d, r, t = f["deletions"], f["overwrite_rounds"], f["time_to_erasure_ms"]
        say(
            f"  deletions (ledger rows): {d['total']}: met {d['met']}, breached "
            f"{d['breached']}, pending {d['pending']}"
        )
        say(
            f"  overwrite rounds: {r['rounds']} rounds, {r['total']} partition rows: met "
            f"{r['met']}, breached {r['breached']}, pending {r['pending']}"
        )
        ratio = "" if t["max"] is None else f" (max = {t['max'] / sla:.0%} of the SLA)"
        say(
            f"  time to erasure, deletions: p50 {_s(t['p50'])}, p99 {_s(t['p99'])}, max "
            f"{_s(t['max'])} against {_s(sla)}{ratio}"
        )
        rt = f["round_time_to_erasure_ms"]
        say(
            f"  time to erasure, rounds (from their oldest change): p50 {_s(rt['p50'])}, "
            f"max {_s(rt['max'])}; opened to completed: p50 "
            f"{_s(f['round_open_to_complete_ms']['p50'])}, max "
            f"{_s(f['round_open_to_complete_ms']['max'])}"
        )
        say("  deletion stages, time after the append (p50 / max):")
        for stage, spread in f["stage_after_append_ms"].items():
            say(f"    {stage:<18} {_s(spread['p50']):>9} / {_s(spread['max']):>9}")
        if f["breaches"]:
            say(f"  BREACHES: {len(f['breaches'])}, by breach_stage: {f['breaches_by_stage']}")
            for b in f["breaches"][:20]:
                why = f" ({b['error']})" if b["error"] else ""
                say(
                    f"    {b['partition']} {b['what']}: deadline {b['deadline']}, completed "
                    f"{b['completed_at']}, stage {b['breach_stage']}{why}"
                )
    for v in out["verified"]:
        verdict = v["verdict"]
        say(
            f"  verify-erasure {TOPIC}-{v['partition']} {v['key']}: {verdict} (exit "
            f"{v['exit']}; ledger: {', '.join(v['ledger']) or '-'}; still found: {v['found']})"
        )
    for problem in out["problems"]:
        say(f"  PROBLEM: {problem}")
    say(f"  work dir: {out['workdir']}" + (" (kept)" if out["kept"] else " (removed)"))


# --- driving -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser("soak_sla", __doc__, json_file=False)
    parser.add_argument("--minutes", type=float, default=5, help="of input (default 5)")
    parser.add_argument("--sla-ms", type=int, default=60_000, help="gdpr.deletion.sla.ms (60000)")
    parser.add_argument(
        "--delete-retention-ms",
        type=int,
        help="delete.retention.ms (default: 10 x the SLA, longer if the run needs it)",
    )
    parser.add_argument("--keys", type=int, default=200, help="key pool (default 200)")
    parser.add_argument("--delete-fraction", type=float, default=0.2, help="tombstones (0.2)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workdir", type=Path, help="an empty or new dir, kept (default: temp)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    log = sys.stderr if args.json else sys.stdout

    def say(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", file=log, flush=True)

    if args.workdir is not None:
        if args.workdir.exists() and any(args.workdir.iterdir()):
            parser.error(f"--workdir {args.workdir}: not empty (the run needs fresh tables)")
        args.workdir.mkdir(parents=True, exist_ok=True)
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="segcompact-soak-"))).resolve()
    sla = args.sla_ms
    run_s = 60 + args.minutes * 60 + sla / 1000 + MARGIN_S
    retention = args.delete_retention_ms or max(10 * sla, round(2 * run_s * 1000))
    config_path = write_config(
        work,
        [work / "in"],
        rolled_only=False,
        stream={"trigger_interval": "2 seconds", "materialize_check_interval_ms": 5000},
        state={"deleted_file_retention_ms": 5000},
        defaults={"gdpr.deletion.sla.ms": sla, "delete.retention.ms": retention},
    )
    try:
        config = load_config(config_path)  # refuses an SLA shorter than 4 x each wait
    except SegcompactError as e:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
        parser.error(str(e))
    # Background passes this process's environment on (harness.cli_env); a throwaway secret.
    secret = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
    os.environ[SECRET_VARIABLE] = secret
    spark_conf = work / "spark-conf"  # empty: Spark's defaults, C2 JIT for a long run
    spark_conf.mkdir(exist_ok=True)

    rnd = random.Random(args.seed)
    (work / "in").mkdir(exist_ok=True)  # the log dir, there before the job (which checks it)
    producer = Producer(work / "in", work / "staging", rnd, args.keys, args.delete_fraction)
    problems: list[str] = []
    run: dict[str, Any] = {"minutes": args.minutes}
    out: dict[str, Any] = {"sla_ms": sla, "delete_retention_ms": retention, "run": run}
    say(f"soak: work dir {work}, SLA {sla} ms, {args.minutes} min of input; starting the job")
    run["load_before"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    t0 = time.monotonic()
    cpu0, own0, busy0 = tree_cpu_seconds(), time.process_time(), busy_cpu_seconds()
    with Background(
        "run", "--config", config_path, "--verbose", cwd=work, spark_conf_dir=spark_conf
    ) as job:
        started = Path(config.stream.checkpoint) / "query" / "metadata"
        wait_for("the streaming query's start", started.exists, running=job)
        t1 = time.monotonic()
        run["startup_s"] = t1 - t0
        say(f"job's query started after {run['startup_s']:.0f} s; producing")
        end, report_at = t1 + args.minutes * 60, t1 + 30
        while time.monotonic() < end and job.running():
            producer.append()
            if time.monotonic() >= report_at:
                report_at += 30
                say(f"  {dict(producer.counts)}")
            time.sleep(max(0.0, min(rnd.uniform(1, 3), end - time.monotonic())))
        t2 = time.monotonic()
        run["produce_s"] = t2 - t1
        last = producer.last_append_ms or _now_ms()
        hold_until = t2 + max(0.0, (last + sla - _now_ms()) / 1000) + MARGIN_S
        say(f"produced {dict(producer.counts)}; holding {hold_until - t2:.0f} s for the deadlines")
        while time.monotonic() < hold_until and job.running():
            time.sleep(1)
        t3 = time.monotonic()
        run["hold_s"] = t3 - t2
        cpu1 = tree_cpu_seconds()
        own = time.process_time() - own0
        busy1 = busy_cpu_seconds()
        run["job_cpu_s"] = None if cpu0 is None or cpu1 is None else cpu1 - cpu0 - own
        run["other_cpu_s"] = None
        if busy0 is not None and busy1 is not None and cpu0 is not None and cpu1 is not None:
            run["other_cpu_s"] = busy1 - busy0 - (cpu1 - cpu0)
        run["cores"] = os.cpu_count()
        run["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        if job.running():
            say("SIGTERM to the job")
            job.terminate()
            run["job_exit"] = job.wait()
        else:
            run["job_exit"] = job.proc.returncode
            problems.append(f"the job exited early, at {t3 - t0:.0f} s")
        run["stop_s"] = time.monotonic() - t3
        if run["job_exit"] != 0:
            tail = job.stderr()[-3000:]
            problems.append(f"the job's exit code was {run['job_exit']}; its stderr ends:\n{tail}")
    t4 = time.monotonic()
    run["micro_batches"] = micro_batches(Checkpoint(Path(config.stream.checkpoint) / "query"))
    unread = producer.counts["segments"] - run["micro_batches"]["segments_read"]
    if unread:
        problems.append(
            f"{unread} segments were never read before the stop: their deletions are in no "
            "ledger row, so the SLA report cannot show them"
        )

    def cli(*args_: str) -> tuple[int, str, str]:
        done = run_cli(*args_, cwd=work, spark_conf_dir=spark_conf)
        return done.returncode, done.stdout, done.stderr

    say("job stopped; segcompact sla")
    code, stdout, stderr = cli("sla", "--config", str(config_path), "--format", "json")
    if code == 0:
        report = json.loads(stdout)
        (work / "sla.json").write_text(stdout, encoding="utf-8")
        out["figures"] = figures(report, sla)
        if out["figures"]["breaches"]:
            problems.append(f"{len(out['figures']['breaches'])} breaches")
    else:
        out["sla_error"] = stderr.strip()[-2000:]
        problems.append(f"segcompact sla exited {code}")
    verified = []
    for p, key in producer.deleted_keys(VERIFIED_KEYS):
        say(f"verify-erasure {TOPIC}-{p} {key}")
        code, stdout, stderr = cli(
            "verify-erasure",
            "--config",
            str(config_path),
            "--topic",
            TOPIC,
            "--partition",
            str(p),
            "--key",
            key,
            "--format",
            "json",
        )
        try:
            proof = json.loads(stdout)
        except ValueError:
            proof = {"verdict": None, "found": [], "ledger": [], "error": stderr.strip()[-2000:]}
        hashed = key_hash(secret.encode(), TOPIC, p, key.encode())
        verified.append(
            {
                "partition": p,
                "key": key,
                "exit": code,
                "verdict": proof.get("verdict"),
                "erased": code == 0 and proof.get("verdict") == "erased",
                "found": len(proof.get("found", [])),
                "ledger": [f"offset {r['offset']} {r['status']}" for r in proof.get("ledger", [])],
                "key_hash_matches": proof.get("key_hash") in (None, hashed),
                "error": proof.get("error"),
            }
        )
        if not verified[-1]["erased"]:
            problems.append(f"{TOPIC}-{p} {key} is not erased: {stdout[-2000:] or stderr[-2000:]}")
    out["verified"] = verified
    run["report_s"] = time.monotonic() - t4
    run["wall_s"] = time.monotonic() - t0
    out["produced"] = {
        k: producer.counts.get(k, 0)
        for k in (
            "segments",
            "records",
            "deletes",
            "deletes of a live value",
            "deletes of no value",
            "overwrites",
            "first values",
        )
    }
    out["problems"] = problems
    out["workdir"] = str(work)
    out["kept"] = args.workdir is not None or bool(problems)
    human(out, log)
    if args.json:
        print(json.dumps(out, indent=2))
    if not out["kept"]:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
