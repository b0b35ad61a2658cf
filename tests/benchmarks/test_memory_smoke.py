"""The memory benchmark on a 4 MiB segment: the run succeeds and every process kind's peak is
read; sizes are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import memory

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]


def test_memory_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    args = ["--size-mib", "4", "--keys", "5000", "--spark-conf-dir", str(spark_conf_dir)]
    out = memory.main([*args, "--workdir", str(tmp_path)])

    log = out["log"]
    assert log["segments"] == 1 and 3 << 20 < log["largest_segment_bytes"] <= 4 << 20
    assert out["run"]["exit_code"] == 0
    peaks = out["peak_rss"]
    assert set(peaks) == {"python driver", "jvm", "python worker"}, peaks
    assert all(r["max_mib"] > 10 for r in peaks.values()), peaks
