"""The end-to-end benchmark runs on a tiny log; both methods must agree, timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.benchmarks import e2e

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]

KEYS = 2000


def test_e2e_benchmark_smoke(tmp_path: Path, spark: SparkSession) -> None:
    args = ["--size-mib", "2", "--partitions", "2", "--keys", str(KEYS)]
    out = e2e.main([*args, "--segment-mib", "0.5", "--workdir", str(tmp_path)], spark=spark)

    log = out["log"]
    assert log["file_bytes"] >= 2 << 20 and log["partitions"] == 2 and log["keys"] == KEYS
    assert log["segments"] > 2  # rolled: several segments per partition
    assert log["records"] > 5 * KEYS  # every key, then updates
    assert 0.02 < log["tombstones"] / log["records"] < 0.08

    check = out["check"]
    assert check["segcompact_rows"] == check["plain_rows"] == KEYS
    assert check["only_segcompact"] == check["only_plain"] == 0, check["examples"]
    assert check["sample_keys"] > 0
    assert check["sample_misses_segcompact"] == check["sample_misses_plain"] == 0
    assert check["ok"]

    ours, plain = out["results"]["segcompact"], out["results"]["plain"]
    for r in (ours, plain):
        assert r["records"] == log["records"] and r["file_bytes"] == log["file_bytes"]
        assert r["state_rows"] == KEYS and 0 < r["tombstone_rows"] < KEYS
        assert r["seconds"] > 0 and r["records_per_s"] > 0
    assert ours["tombstone_rows"] == plain["tombstone_rows"]
    assert out["ratio_records_per_s"] > 0 and out["ratio_records_per_s_without_materialise"] > 0
    assert set(out["decode_only"]) == {"segcompact", "plain"}
    assert any(name.strip().startswith("state MERGE") for name in ours["phases"])
