"""The memory benchmark on a 4 MiB segment and a segment of 200 000 tiny records in v1 gzip
wrappers: each run succeeds and every process kind's peak is read; sizes are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import memory

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]


def test_memory_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    args = ["--size-mib", "4", "--keys", "5000", "--spark-conf-dir", str(spark_conf_dir)]
    args += ["--cases", "large,tiny-v1", "--v1-records", "200000"]
    out = memory.main([*args, "--workdir", str(tmp_path)])

    assert set(out) == {"large", "tiny-v1"}
    large, tiny = out["large"]["log"], out["tiny-v1"]["log"]
    assert large["segments"] == 1 and 3 << 20 < large["largest_segment_bytes"] <= 4 << 20
    assert tiny["records"] == 200_000 and tiny["largest_segment_bytes"] < 4 << 20
    for case in out.values():
        assert case["run"]["exit_code"] == 0
        peaks = case["peak_rss"]
        assert set(peaks) == {"python driver", "jvm", "python worker"}, peaks
        assert all(r["max_mib"] > 10 for r in peaks.values()), peaks


def test_unknown_cases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit:
        memory.main(["--cases", "large,huge", "--workdir", str(tmp_path)])
    assert exit.value.code == 2
