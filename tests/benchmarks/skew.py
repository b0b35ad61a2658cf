"""Bad input at scale: one partition far bigger than the others, beside them.

    python -m tests.benchmarks.skew [--case many-segments] [--case skewed] [--segments 100000]
        [--huge-records 600000] [--tiny 4000] [--workdir D] [--json F]

Two cases, each one topic written by segcompact's own encoder (``tests/support/small_partitions``):

- **many-segments**: one partition directory of ``--segments`` (100,000) rolled segments of
  ``--segment-records`` (2) records each, beside ``--others`` (16) partitions of two rolled
  segments of 200 records;
- **skewed**: one partition of ``--huge-records`` (600,000) records in ``--huge-segments`` (8)
  rolled segments, beside ``--tiny`` (4,000) partitions of two rolled segments of 20 records.

For each, one ``run --once`` on fresh tables (a whole process tree under :func:`measure.reap`:
wall, CPU, peak RSS by role, peak open files), then every partition's published output compared
with the reference model's: the big one and every other, all in that one run (nothing starved).
Beside it, unless ``--no-reference``, the same command on the other partitions alone: the ratio
says what sharing a run with the big partition cost them.

Nothing here asserts a time: the figures go to stdout (and ``--json``).
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.benchmarks import options
from tests.benchmarks.partitions import check, describe, measured
from tests.e2e.harness import CLI
from tests.support import config as support_config
from tests.support.keyed_log import MiB
from tests.support.small_partitions import SmallPartitions

TOPIC = "skew"
CASES = ("many-segments", "skewed")
ROLLED = 2  # rolled segments of each small partition


def logs(
    args: argparse.Namespace, case: str, root: Path
) -> tuple[SmallPartitions, SmallPartitions]:
    """The case's big partition (number 0) and the others (1, 2, ...), in one topic."""
    tombstones, seed = args.tombstones, args.seed
    if case == "many-segments":
        big = SmallPartitions(root, TOPIC, 1, args.segment_records, 50, tombstones, seed)
        others = SmallPartitions(root, TOPIC, args.others, 200, 20, tombstones, seed, first=1)
        return big, others
    records = max(1, args.huge_records // args.huge_segments)
    big = SmallPartitions(root, TOPIC, 1, records, args.huge_records // 3, tombstones, seed)
    others = SmallPartitions(root, TOPIC, args.tiny, 20, 5, tombstones, seed, first=1)
    return big, others


def run_case(
    args: argparse.Namespace,
    case: str,
    parts: Sequence[SmallPartitions],
    rolled: Sequence[int],
    work: Path,
    spark_conf_dir: Path,
) -> dict[str, Any]:
    """``run --once`` on ``parts`` (each with its number of rolled segments), then the check."""
    for log, n in zip(parts, rolled, strict=True):
        log.write(n)
    job = work / "job"
    config = support_config.write_config(job, [parts[0].root])
    described = [describe(log) for log in parts]
    out: dict[str, Any] = {
        "log": {
            "partitions": sum(d["partitions"] for d in described),
            "rolled_segments": sum(d["rolled_segments"] for d in described),
            "bytes": sum(d["bytes"] for d in described),
        }
    }
    print(
        f"  {case}: {out['log']['partitions']:,} partitions, {out['log']['bytes'] / MiB:,.1f} MiB "
        f"in {out['log']['rolled_segments']:,} rolled segments"
    )
    argv: list[str | Path] = [*CLI, "run", "--once", "--config", config]
    out["run"] = measured(argv, work / "run", job, spark_conf_dir, args.run_timeout_s)
    # The first max(rolled) segments of every partition: all of each part's rolled ones (the
    # slice may take a smaller part's empty active segment too, which holds no record).
    out["check"] = check(parts, config, max(rolled))
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("skew", __doc__)
    parser.add_argument("--case", action="append", choices=CASES, help="repeatable (both)")
    parser.add_argument("--segments", type=int, default=100_000, help="many-segments (100000)")
    parser.add_argument("--segment-records", type=int, default=2, help="many-segments (2)")
    parser.add_argument("--others", type=int, default=16, help="many-segments (16)")
    parser.add_argument("--huge-records", type=int, default=600_000, help="skewed (600000)")
    parser.add_argument("--huge-segments", type=int, default=8, help="skewed (8)")
    parser.add_argument("--tiny", type=int, default=4000, help="skewed (4000)")
    parser.add_argument("--tombstones", type=float, default=0.1, help="share of nulls (0.1)")
    parser.add_argument(
        "--no-reference", action="store_true", help="skip the others-alone run beside each case"
    )
    parser.add_argument(
        "--run-timeout-s", type=float, default=4 * 3600, help="a bound on a hang (14400)"
    )
    parser.add_argument("--seed", type=int, default=42)
    options.add_workdir(parser, "skew", "logs, tables and the runs' output go to <workdir>/run")
    options.add_spark_conf_dir(parser)
    args = parser.parse_args(argv)
    positive = (args.segments, args.segment_records, args.others, args.huge_records)
    if min(*positive, args.huge_segments, args.tiny) < 1 or not 0 <= args.tombstones < 1:
        parser.error("counts >= 1 and 0 <= --tombstones < 1")

    work = args.workdir / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spark_conf_dir = options.spark_conf_dir(args, work)
    out: dict[str, Any] = {"cases": {}}
    with options.own_cache(work):
        for case in args.case or CASES:
            folder = work / case
            big, others = logs(args, case, folder / "log")
            big_rolled = args.segments if case == "many-segments" else args.huge_segments
            result = run_case(
                args, case, [big, others], [big_rolled, ROLLED], folder, spark_conf_dir
            )
            if not args.no_reference:
                alone = work / f"{case}-others-alone"
                _, others = logs(args, case, alone / "log")
                result["others_alone"] = run_case(
                    args, case, [others], [ROLLED], alone, spark_conf_dir
                )
            out["cases"][case] = result
    out["load_average"] = os.getloadavg()
    options.write_json(args, out)
    report(out)
    return out


def report(out: dict[str, Any]) -> None:
    print("\nbad input at scale (one run --once each; CPU of the whole process tree)")
    for case, r in out["cases"].items():
        run, ok = r["run"], r["check"]["ok"]
        line = (
            f"  {case}: {r['log']['partitions']:,} partitions, {r['log']['rolled_segments']:,} "
            f"segments, {r['log']['bytes'] / MiB:,.1f} MiB: exit {run['exit_code']}, "
            f"{run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} CPU s, "
            f"{run['open_files']['all']:,} files open at most; every partition the model's: "
            f"{'yes' if ok else 'NO ' + str(r['check']['differ'])}"
        )
        print(line)
        alone = r.get("others_alone")
        if alone:
            ratio = run["cpu_s"] / alone["run"]["cpu_s"]
            print(
                f"    the others alone: {alone['run']['wall_s']:.1f} s wall, "
                f"{alone['run']['cpu_s']:.1f} CPU s; with the big one {ratio:.2f}x"
            )
    load = " ".join(f"{x:.2f}" for x in out["load_average"])
    print(f"  load average: {load} (1/5/15 min)")


if __name__ == "__main__":
    main()
