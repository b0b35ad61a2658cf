"""The state-values benchmark runs on a few rows; its timings are not checked, but what its
writes say of the ``value`` column is: the table property that turns the dictionary off reaches
Delta's Parquet writer, and high-entropy values get none either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.benchmarks import state_values

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]

DICTIONARY = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}


def test_state_values_benchmark_smoke(spark: SparkSession, tmp_path: Path) -> None:
    args = ["--rows", "4000", "--value-bytes", "64", "--repeat", "1", "--workdir", str(tmp_path)]
    kinds = ["--kind", "few", "--kind", "random", "--codec", "snappy", "--codec", "none"]
    out = state_values.main([*args, *kinds])
    assert set(out) == {
        f"{kind} {codec} {way}"
        for kind in ("few", "random")
        for codec in ("snappy", "none")
        for way in ("dictionary", "plain")
    }
    for name, r in out.items():
        assert r["cpu_s"] >= 0 and r["bytes"] > 0, name
        assert r["compression"] == ("UNCOMPRESSED" if " none " in name else "SNAPPY"), name
    # 1,000 distinct values: a dictionary unless the table property turns it off.
    assert DICTIONARY & set(out["few snappy dictionary"]["encodings"])
    assert not DICTIONARY & set(out["few snappy plain"]["encodings"])
    assert out["few snappy plain"]["bytes"] > out["few snappy dictionary"]["bytes"]
    # Distinct random values: Parquet's writer drops the dictionary it tried.
    assert not DICTIONARY & set(out["random snappy dictionary"]["encodings"])
