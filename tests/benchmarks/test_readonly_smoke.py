"""The read-only benchmark runs once each way: both ways print the same, every figure is there;
timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import readonly

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]


def test_readonly_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    out = readonly.main(
        ["--repeat", "1", "--workdir", str(tmp_path), "--spark-conf-dir", str(spark_conf_dir)]
    )
    for name in readonly.COMMANDS:
        assert out[f"{name} ratio"]["same_output"], name
        for way in readonly.WAYS:
            figures = out[f"{name} {way}"]
            assert figures["wall_s"] > 0 and figures["cpu_s"] > 0, (name, way)
