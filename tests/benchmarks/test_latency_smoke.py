"""The latency benchmark with three quick rolls and a one-second trigger: every segment is
committed and measured; timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import latency

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]


def test_latency_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    args = ["--rolls", "3", "--every-s", "0.2", "--records", "500", "--partitions", "2"]
    args += ["--trigger", "1 second", "--spark-conf-dir", str(spark_conf_dir)]
    out = latency.main([*args, "--workdir", str(tmp_path)])

    assert out["rolls"] == len(out["latencies_s"]) == 3
    assert all(s > 0 for s in out["latencies_s"])
    assert out["commits_seen"] >= 1
    assert out["p50_s"] <= out["p99_s"] <= out["max_s"] == max(out["latencies_s"])
    assert out["trigger_s"] == 1
