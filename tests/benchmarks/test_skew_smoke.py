"""The bad-input-at-scale benchmark, small: a partition of 1,500 segments beside 3 others, and a
partition of 30,000 records beside 40 tiny ones. Each finishes in one ``run --once`` with every
partition's output the model's; timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import skew

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]


def test_skew_benchmark_smoke(
    tmp_path: Path, spark_conf_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sizes = ["--segments", "1500", "--others", "3", "--huge-records", "30000", "--tiny", "40"]
    out = skew.main(
        [
            *sizes,
            "--no-reference",
            "--workdir",
            str(tmp_path),
            "--spark-conf-dir",
            str(spark_conf_dir),
        ]
    )

    many, skewed = out["cases"]["many-segments"], out["cases"]["skewed"]
    assert many["log"]["partitions"] == 4
    assert many["log"]["rolled_segments"] == 1500 + 3 * skew.ROLLED
    assert skewed["log"]["partitions"] == 41
    assert skewed["log"]["rolled_segments"] == 8 + 40 * skew.ROLLED
    for case in (many, skewed):
        run, check = case["run"], case["check"]
        assert run["exit_code"] == 0 and run["stragglers_killed"] == 0, run
        assert run["cpu_s"] > 0 and run["open_files"]["all"] > 0
        # Every partition, the big one and each other, published from this one run.
        assert check["ok"], check
        assert check["partitions"] == case["log"]["partitions"]
        assert "others_alone" not in case
    printed = capsys.readouterr().out
    assert printed.count("every partition the model's: yes") == 2
