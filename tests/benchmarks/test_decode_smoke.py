"""The decode benchmark runs end to end on a small segment; its timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import decode

FIXED = ["segcompact", "kafka-python", "floor (CRC + decompress)"]


@pytest.mark.benchmark
def test_decode_benchmark_smoke(tmp_path: Path) -> None:
    args = ["--size-mib", "1", "--dir", str(tmp_path), "--repeat", "1"]
    out = decode.main([*args, "--pure-mib", "0.25", "--codec", "lz4", "--codec", "none"])
    assert set(out) == {"lz4", "none"}
    for codec, run in out.items():
        segment, results = run["segment"], run["results"]
        assert isinstance(segment, dict) and isinstance(results, dict)
        assert segment["file_bytes"] >= 1 << 20
        assert segment["records"] > 1000 and segment["batches"] > 10
        if codec == "lz4":  # realistic data: lz4 saves something, but not everything
            assert 1.5 < segment["records_bytes"] / segment["file_bytes"] < 5
        pure = [name for name in results if name.startswith("segcompact pure")]
        assert len(pure) == 1 and [n for n in results if n not in pure] == FIXED
        for name, r in results.items():
            assert r["seconds"] > 0 and r["records_per_s"] > 0, name
            if name in pure:  # a prefix of whole batches
                assert 0 < r["records"] < segment["records"]
            else:
                assert r["records"] == segment["records"]
                assert r["file_bytes"] == segment["file_bytes"]
        assert run["segcompact_vs_kafka_python"] > 0 and run["segcompact_vs_floor"] > 0
    # A second run finds the cached segment.
    again = decode.main([*args, "--pure-mib", "0", "--codec", "none"])
    assert again["none"]["segment"] == out["none"]["segment"]
