"""The reduce benchmark runs end to end on a small log; its timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import reduce


@pytest.mark.benchmark
def test_reduce_benchmark_smoke(tmp_path: Path) -> None:
    args = ["--size-mib", "1", "--keys", "500", "--workdir", str(tmp_path), "--repeat", "1"]
    out = reduce.main(args)
    assert isinstance(out["file_bytes"], int) and out["file_bytes"] >= 1 << 20
    # Every key was drawn many times: one record per key leaves (both modes: checked).
    assert out["records_left"] == 500
    for mode in reduce.MODES:
        run = out[mode]
        assert isinstance(run, dict) and run["median"] > 0
    assert reduce.main(args)["file_bytes"] == out["file_bytes"]  # the cached log
