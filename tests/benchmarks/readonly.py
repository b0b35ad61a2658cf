"""The read-only commands on the demo's tables: by delta-rs (as ``segcompact`` runs them) beside
the same commands made to read through Spark (what they did before: a JVM per command).

    python -m tests.benchmarks.readonly [--repeat 5] [--workdir D] [--json F]

``segcompact demo --workdir D`` writes the tables once; then ``status`` and ``sla`` (JSON) run
``--repeat`` times each way, each a whole process tree under :func:`measure.reap` (the JVM
included). Reported: median wall and CPU seconds each way and the Spark/delta-rs ratio; both
ways must print the same. Every run's clock is pinned at the time the measurement starts
(``SEGCOMPACT_CLOCK_MS``): what ``sla`` reports moves with the time (the demo's unread segment
turns from backlog to unverified at a quarter of its SLA), and the ways run one after the
other. Nothing here asserts a time.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from segcompact.clock import SystemClock
from segcompact.erasure.keyhash import SECRET_VARIABLE
from tests.benchmarks import options
from tests.benchmarks.measure import reaped
from tests.e2e.harness import run_cli

CONFIG = Path(__file__).resolve().parents[2] / "conf" / "compactor.toml"
SECRET = "the read-only benchmark's secret"
COMMANDS = {"status": ["status", "--format", "json"], "sla": ["sla", "--format", "json"]}
# The CLI with delta-rs refused: every read goes through Spark.
BY_SPARK = (
    "import sys\n"
    "from segcompact.delta import sql\n"
    "sql.DeltaSql.open = classmethod(lambda cls, views, storage: None)\n"
    "from segcompact.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
WAYS = {"delta-rs": ["-m", "segcompact.cli"], "spark": ["-c", BY_SPARK]}


def measure(work: Path, spark_conf_dir: Path, repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    now_ms = SystemClock().now_ms()  # every run's
    for name, args in COMMANDS.items():
        outputs: dict[str, str] = {}
        for way, runner in WAYS.items():
            runs = []
            for i in range(repeat):
                run_dir = work / "runs" / f"{name}-{way}-{i}"
                argv = [sys.executable, *runner, *args, "--config", str(CONFIG)]
                runs.append(
                    reaped(argv, run_dir, spark_conf_dir, cwd=work, secret=SECRET, clock_ms=now_ms)
                )
                outputs[way] = (run_dir / "stdout.txt").read_text()
            results[f"{name} {way}"] = {
                "runs": repeat,
                "wall_s": statistics.median(r["wall_s"] for r in runs),
                "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            }
        mine, theirs = results[f"{name} delta-rs"], results[f"{name} spark"]
        results[f"{name} ratio"] = {
            "wall": theirs["wall_s"] / mine["wall_s"],
            "cpu": theirs["cpu_s"] / mine["cpu_s"],
            "same_output": _same(outputs["delta-rs"], outputs["spark"]),
        }
    return results


def _same(a: str, b: str) -> bool:
    """Both ways printed the same (at the same pinned time, to the millisecond)."""
    return bool(json.loads(a) == json.loads(b))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = options.parser("readonly", __doc__)
    parser.add_argument("--repeat", type=int, default=5)
    options.add_workdir(parser, "readonly", "the demo's tables and the runs' output")
    options.add_spark_conf_dir(parser)
    args = parser.parse_args(argv)
    work: Path = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    spark_conf_dir = options.spark_conf_dir(args, work)
    demo = run_cli(
        "demo",
        "--config",
        CONFIG,
        "--workdir",
        work,
        cwd=work,
        spark_conf_dir=spark_conf_dir,
        env={SECRET_VARIABLE: SECRET},
    )
    if demo.returncode != 0:
        raise AssertionError(f"segcompact demo failed:\n{demo.stderr[-3000:]}")
    with options.own_cache(work):  # the first run through Spark writes the class archive
        results = measure(work, spark_conf_dir, args.repeat)
    for name in COMMANDS:
        mine, theirs = results[f"{name} delta-rs"], results[f"{name} spark"]
        ratio = results[f"{name} ratio"]
        print(
            f"{name}: delta-rs {mine['wall_s']:.2f} s wall, {mine['cpu_s']:.2f} s CPU; "
            f"through Spark {theirs['wall_s']:.2f} s wall, {theirs['cpu_s']:.2f} s CPU; "
            f"{ratio['wall']:.1f}x faster, {ratio['cpu']:.1f}x less CPU; "
            f"same output: {ratio['same_output']}"
        )
    options.write_json(args, results)
    return results


if __name__ == "__main__":
    main()
