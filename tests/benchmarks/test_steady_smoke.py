"""The steady-state benchmark on tiny logs: every layout's state is right, one micro-batch per
update segment, Delta's MERGE metrics read; timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.benchmarks import steady

pytestmark = [pytest.mark.benchmark, pytest.mark.spark]

BATCHES = 2
# segcompact's layout (deletion vectors). The layouts the benchmark compares it with are made by
# ``steady._create`` and run the same way; a run of each would double this test's 2 minutes.
LAYOUTS = ("default",)


def test_steady_benchmark_smoke(tmp_path: Path, spark: SparkSession) -> None:
    args = ["--keys", "2000", "--keys", "4000", "--partitions", "2"]
    args += ["--batches", str(BATCHES), "--updates", "300", "--workdir", str(tmp_path)]
    args += [f"--layout={layout}" for layout in LAYOUTS]
    out = steady.main(args, spark=spark)

    assert [log["keys"] for log in out["logs"]] == [2000, 4000]
    assert {(r["layout"], r["keys"]) for r in out["runs"]} == {
        (layout, keys) for layout in LAYOUTS for keys in (2000, 4000)
    }
    for r in out["runs"]:
        where = (r["layout"], r["keys"])
        assert r["check"]["ok"], (where, r["check"])
        assert r["check"]["want"]["tombstones"] > 0, where
        # One micro-batch and one state MERGE per update segment.
        assert r["summary"]["batches"] == BATCHES, where
        assert len(r["merges"]) == BATCHES, where
        for m in r["merges"]:
            # An update segment holds one partition: the MERGE reads and changes only its files.
            assert m["numTargetRowsUpdated"] > 0, (where, m)
            assert m["numTargetRowsInserted"] == 0, (where, m)
            # Updated rows are marked deleted in place, the rest of the file not copied.
            assert m["numTargetDeletionVectorsAdded"] >= 1, (where, m)
            assert m["numTargetRowsCopied"] == 0, (where, m)
    assert set(out["ratios"]) == set(LAYOUTS)
