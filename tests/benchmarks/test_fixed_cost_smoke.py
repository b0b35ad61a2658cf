"""The fixed-cost benchmark runs with a short idle window: every figure is there, and the idle
job runs no micro-batch on an empty source; timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import fixed_cost

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]


def test_fixed_cost_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    args = ["--idle-s", "3", "--settle-s", "0", "--spark-conf-dir", str(spark_conf_dir)]
    out = fixed_cost.main([*args, "--workdir", str(tmp_path)])
    for name in ("fresh", "restart"):
        run = out[name]
        assert run["exit_code"] == 0 and run["stragglers_killed"] == 0, name
        assert run["cpu_s"] > 0 and run["wall_s"] > 0, name
        assert {"Spark session", "tables"} <= set(run["steps"]), (name, run["steps"])
        assert "query" not in run["steps"], "nothing to read: no streaming query starts"
    idle = out["idle"]
    assert idle["window_s"] >= 3 and idle["cpu_s"] >= 0
    # An empty source: no micro-batch but the one Spark runs on nothing for a new checkpoint
    # (the run --once before it, with nothing to read, started no query that would have).
    assert idle["batches"] <= 1
