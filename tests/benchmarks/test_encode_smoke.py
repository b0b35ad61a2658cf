"""The encode benchmark runs end to end on a small segment; its timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import encode

NAMES = ["segcompact", "segcompact pure", "kafka-python", "floor (compress + CRC)"]


@pytest.mark.benchmark
def test_encode_benchmark_smoke(tmp_path: Path) -> None:
    args = ["--size-mib", "1", "--dir", str(tmp_path), "--repeat", "1", "--pure-records", "500"]
    out = encode.main([*args, "--codec", "lz4", "--codec", "none"])
    assert set(out) == {"lz4", "none"}
    for codec, run in out.items():
        results = run["results"]
        assert list(results) == NAMES
        assert run["records"] > 1000
        for name, r in results.items():
            assert r["cpu_seconds"] >= 0 and r["bytes"] > 0, (codec, name)
            assert r["records"] == (500 if name == "segcompact pure" else run["records"])
        # The same records in batches of the same size: kafka-python's file is ours, give or
        # take the grouping of records into batches.
        ours, theirs = results["segcompact"]["bytes"], results["kafka-python"]["bytes"]
        assert 0.9 < ours / theirs < 1.1, (codec, ours, theirs)
        assert run["segcompact_vs_kafka_python"] > 0 and run["segcompact_vs_floor"] > 0
