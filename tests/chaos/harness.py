"""Chaos: ``kill -9`` of segcompact's whole process tree at seeded random moments of every step
of a job's life, then the job finished, and every table and the output compared with an
uninterrupted run of the same steps.

    python -m tests.chaos.harness --kills 50 [--seed N] [--work DIR] [--s3]

The steps, each a ``segcompact`` command in a process group of its own, on a pinned clock
(``SEGCOMPACT_CLOCK_MS``): ``run --once`` over the first half of the log (one segment per
micro-batch); the continuous ``run`` over the rest, finished by ``run --once``; ``run --once``
an hour later, when the lagged topic's young records graduate; ``delete-records``;
``materialize --force``; ``purge --force`` (an erasure round: REORG PURGE, VACUUM,
re-materialisation). A step is killed after a delay drawn from the seeded generator over its
uninterrupted duration — before Spark is up, in a Delta commit, while a version's files or its
manifest are written — and started again until it runs to its end; each kill is a kill point.
Compared, without the columns a killed attempt moves (timestamps, output version numbers): every
Delta table of the job, and each partition's published output. A round of these steps makes
about twenty kill points (a step restarted often enough has nothing left to do); rounds on new
logs follow until ``--kills`` are made.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from segcompact.clock import CLOCK_VARIABLE
from segcompact.config import CompactorConfig, load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE
from tests.e2e.harness import (
    Background,
    Log,
    _topic_settings,
    delta_rows,
    output_records,
    write_config,
    write_log,
)

SECRET = "the chaos harness's ledger secret"
# One segment per micro-batch: a kill point between every two.
SEGMENTS_PER_BATCH = 1
# The generated records' times are within 50 s of 1,000,000 ms; "orders" keeps the last
# LAG_MS of them raw: at YOUNG_MS they are young, at OLD_MS (an hour on) they graduate.
LAG_MS = 20_000
YOUNG_MS = 1_060_000
OLD_MS = YOUNG_MS + 3_600_000


@dataclass
class Step:
    name: str
    args: list[str]  # the command killed
    before: Callable[[], None] = lambda: None
    now_ms: int = YOUNG_MS
    # The command that runs the step to its end, when ``args`` never ends by itself (the
    # continuous job); the uninterrupted run runs only this one.
    finish: list[str] | None = None

    @property
    def to_the_end(self) -> list[str]:
        return self.finish or self.args


@dataclass(frozen=True)
class Store:
    """Where a job's tables, checkpoint and output go: its folder (None), or a URI per job
    with the ``[spark]`` settings that reach it."""

    base: Callable[[str], str] | None = None  # the job's name → its locations' URI
    spark: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Job:
    """One job's folder: its own copy of the source, its config, and how its steps went."""

    work: Path
    log: Log
    spark_conf: Path | None = None  # a SPARK_CONF_DIR for the commands' JVMs
    store: Store = Store()
    segments_per_batch: int = SEGMENTS_PER_BATCH
    only: Collection[str] | None = None  # the steps run, by name (None: every one)
    config_path: Path = field(init=False)
    root: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root = self.work / "in"
        self.root.mkdir(parents=True)
        topics = _topic_settings()
        topics["users"] = {**topics["users"], "gdpr.deletion.sla.ms": "86400000"}
        topics["orders"] = {**topics.get("orders", {}), "min.compaction.lag.ms": str(LAG_MS)}
        self.config_path = write_config(
            self.work,
            [self.root],
            stream={
                "max_segments_per_batch": self.segments_per_batch,
                "materialize_check_interval_ms": 3_600_000,
            },
            topics=topics,
            base=None if self.store.base is None else self.store.base(self.name),
            spark=self.store.spark,
        )

    @property
    def name(self) -> str:
        """Unique in a harness run: its round's folder and its own (``round-0-chaos``)."""
        return f"{self.work.parent.name}-{self.work.name}"

    @property
    def config(self) -> CompactorConfig:
        return load_config(self.config_path)

    def arrive(self, half: int) -> None:
        """The first (0) or second (1) half of each partition's segments (the active one is
        the second half's last, as in a log dir)."""
        for (topic, partition), paths in self.log.segments.items():
            middle = len(paths) // 2
            for path in paths[:middle] if half == 0 else paths[middle:]:
                target = self.root / f"{topic}-{partition}"
                target.mkdir(exist_ok=True)
                shutil.copy(path, target / path.name)

    def steps(self) -> list[Step]:
        """The job's steps, or those of :attr:`only` (named as :data:`STEPS` names them)."""
        return [s for s in self._steps() if self.only is None or s.name in self.only]

    def _steps(self) -> list[Step]:
        offsets = self.work / "offsets.json"
        offsets.write_text(
            json.dumps({"partitions": [{"topic": "orders", "partition": 0, "offset": 10}]})
        )
        config = ["--config", str(self.config_path)]
        once = ["run", *config, "--once"]
        return [
            Step("run --once (first half)", once, lambda: self.arrive(0)),
            Step("run (second half)", ["run", *config], lambda: self.arrive(1), finish=once),
            Step("run --once (graduation)", once, now_ms=OLD_MS),
            Step(
                "delete-records",
                ["delete-records", *config, "--offset-json-file", str(offsets)],
                now_ms=OLD_MS,
            ),
            Step("materialize --force", ["materialize", *config, "--force"], now_ms=OLD_MS),
            Step("purge --force", ["purge", *config, "--force"], now_ms=OLD_MS),
        ]


def run_step(job: Job, step: Step, kill_after: float | None) -> bool:
    """``step``, killed (with everything it started) ``kill_after`` seconds in unless it ended
    first; True when it ran to its end, which must then be a success. Killed or not, the step
    is then run to its end by its ``finish`` command when it has one."""
    args = step.args if kill_after is not None else step.to_the_end
    env = {SECRET_VARIABLE: SECRET, CLOCK_VARIABLE: str(step.now_ms)}
    with Background(*args, cwd=job.work, spark_conf_dir=job.spark_conf, env=env) as proc:
        try:
            code = proc.proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:  # still running: killed, the JVM and workers too
            proc.kill_group()
            return False
    if code != 0:
        raise AssertionError(f"{step.name} failed ({code}): {proc.stderr()[-3000:]}")
    return True


def uninterrupted(job: Job, after: Callable[[Step], None] = lambda _: None) -> list[float]:
    """Every step run to its end, ``after`` called after each; how long each took."""
    took = []
    for step in job.steps():
        step.before()
        start = time.monotonic()
        assert run_step(job, step, None)
        took.append(time.monotonic() - start)
        after(step)
    return took


def with_kills(job: Job, durations: list[float], kills: int, seed: int) -> list[str]:
    """Every step, each killed at random moments until it has taken its share of ``kills``, then
    run to its end; the kill points, as "step at N.N s"."""
    rng = random.Random(seed)
    steps = job.steps()
    points: list[str] = []
    for i, (step, took) in enumerate(zip(steps, durations, strict=True)):
        step.before()
        # This step's share of what is left: a step that ends before its kill (a restarted one
        # has less left to do than the whole) hands the rest of its share on.
        share = (kills - len(points)) // (len(steps) - i)
        killed, ended = 0, False
        while killed < share and not ended:
            delay = rng.uniform(0, 0.8 * took)
            ended = run_step(job, step, delay)  # ended before the kill: the step is done
            if not ended:
                killed += 1
                points.append(f"{step.name} at {delay:.1f} s")
        if not ended or step.finish:
            assert run_step(job, step, None)
    return points


# Besides timestamps: what a killed attempt moves (output versions are never reused).
_MOVED = ("version",)


def _comparable(config: CompactorConfig, table: str) -> list[tuple[Any, ...]]:
    """A table's rows, sorted, without what a killed attempt moves; read by delta-rs."""
    data = delta_rows(config, table)
    keep = [
        f.name
        for f in data.schema
        if not pa.types.is_timestamp(f.type) and not any(m in f.name for m in _MOVED)
    ]
    return sorted((tuple(r.values()) for r in data.select(keep).to_pylist()), key=repr)


def differences(reference: Job, chaos: Job) -> list[str]:
    """What differs between the two jobs' tables and published output (nothing, we expect)."""
    found = []
    ours, theirs = reference.config, chaos.config
    for name, a, b in zip(
        ("state", "partitions", "pending", "young", "ledger"),
        ours.state.tables(),
        theirs.state.tables(),
        strict=True,
    ):
        if _comparable(ours, a) != _comparable(theirs, b):
            found.append(f"the {name} table differs")
    if output_records(ours) != output_records(theirs):
        found.append("the published output differs")
    return found


def chaos(
    work: Path,
    kills: int,
    seed: int,
    *,
    records: int = 120,
    spark_conf: Path | None = None,
    store: Store = Store(),
    segments_per_batch: int = SEGMENTS_PER_BATCH,
    only: Collection[str] | None = None,
) -> tuple[list[str], list[str]]:
    """The kill points and the differences found, on a log of two topics of two partitions
    with about ``records`` records each, read ``segments_per_batch`` segments a micro-batch;
    the steps named in ``only``, or every one."""
    log = write_log(work / "log", seed, records=records, batches_per_segment=4)
    reference = Job(work / "reference", log, spark_conf, store, segments_per_batch, only)
    killed = Job(work / "chaos", log, spark_conf, store, segments_per_batch, only)
    young: dict[str, int] = {}

    def count_young(step: Step) -> None:
        config = reference.config
        young[step.name] = delta_rows(config, config.state.young_table).num_rows

    durations = uninterrupted(reference, count_young)
    if "run (second half)" in young:
        assert young["run (second half)"] > 0, f"no young record to graduate: {young}"
    if "run --once (graduation)" in young:
        assert young["run --once (graduation)"] == 0, f"young records left: {young}"
    points = with_kills(killed, durations, kills, seed)
    return points, differences(reference, killed)


def rounds(
    work: Path, kills: int, seed: int, *, store: Store = Store()
) -> tuple[list[str], list[str]]:
    """:func:`chaos` rounds, each on a log of its own (seed, seed + 1, ...), until ``kills``
    kill points are made or a round finds a difference: a step can be killed only a few times
    before a restart has nothing left to do, so one round's steps make about twenty."""
    points: list[str] = []
    found: list[str] = []
    for n in range(kills):  # a round without a single kill point would loop for ever
        if len(points) >= kills or found:
            break
        got, differ = chaos(work / f"round-{n}", kills - len(points), seed + n, store=store)
        points += [f"round {n}: {p}" for p in got]
        found += [f"round {n}: {d}" for d in differ]
    return points, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--work", type=Path, default=Path(".tools/chaos"))
    parser.add_argument(
        "--s3", action="store_true", help="tables, checkpoint and output on a MinIO server"
    )
    args = parser.parse_args()
    work = args.work.resolve()  # the commands run in their job folders
    shutil.rmtree(work, ignore_errors=True)
    with contextlib.ExitStack() as stack:
        store = Store()
        if args.s3:
            from tests.support.minio import MinioServer

            minio = stack.enter_context(MinioServer(work / "minio"))
            store = Store(lambda job: f"s3a://{minio.make_bucket(job)}", minio.spark_settings())
        points, found = rounds(work, args.kills, args.seed, store=store)
    for point in points:
        print(f"killed: {point}")
    where = " on S3" if args.s3 else ""
    print(
        f"{len(points)} kill points{where}; tables and output "
        f"{'identical' if not found else 'DIFFER'}"
    )
    for what in found:
        print(f"  {what}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
