"""The cleaner benchmark runs on a tiny log: Kafka's cleaner and segcompact must keep the same
records, and every figure must be there and positive; timings are not checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import cleaner
from tests.support.jvm import kafka_jars_available, missing_kafka_message
from tests.support.keyed_log import MiB

pytestmark = [pytest.mark.benchmark, pytest.mark.spark, pytest.mark.kafka]

KEYS = 1000  # per partition
PARTITIONS = ["cleaner-bench-0", "cleaner-bench-1"]


def test_cleaner_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    if not kafka_jars_available():
        # Not a skip: the test command fetches Kafka, so its absence is a failure.
        pytest.fail(missing_kafka_message())
    args = ["--size-mib", "2", "--partitions", "2", "--keys-per-partition", str(KEYS)]
    args += ["--repeat", "1", "--workdir", str(tmp_path), "--spark-conf-dir", str(spark_conf_dir)]
    out = cleaner.main(args)

    log, produced = out["log"], out["kafka"]["produced"]
    assert log["input_bytes"] >= 2 * MiB and log["partitions"] == 2
    assert log["segments"] >= 2 * 4  # rolled: several segments per partition
    assert produced["records"] > 5 * 2 * KEYS  # every key, then updates
    assert 0.05 < produced["tombstones"] / produced["records"] < 0.15

    # The cleaner cleaned each partition once, all of its rolled segments, and said so.
    stats = out["kafka"]["cleaner"]["stats"]
    assert sorted(s["log"] for s in stats) == PARTITIONS
    for s in stats:
        assert s["dirty_start"] == 0 and s["dirty_end"] > 5 * KEYS
        assert s["start_messages"] > s["end_messages"] > 0
    # Its MB are MiB with one decimal.
    assert abs(out["kafka"]["cleaner"]["processed_bytes"] - log["input_bytes"]) < 0.2 * MiB

    check = out["check"]
    assert check["ok"], check
    assert set(check["partitions"]) == set(PARTITIONS)
    for p in check["partitions"].values():
        assert p["kafka_records"] == p["segcompact_records"] > 0.9 * KEYS
        assert p["only_kafka"] == p["only_segcompact"] == p["differ"] == 0
        assert p["duplicate_keys"] == 0
        assert 0 < p["kafka_tombstones"] == p["segcompact_tombstones"] < p["kafka_records"]
    assert check["kept_records"] == sum(s["end_messages"] for s in stats)

    runs = out["segcompact"]
    for run in runs.values():
        assert run["exit_code"] == 0 and run["stragglers_killed"] == 0
        assert run["cpu_s"] > run["user_cpu_s"] > 0 and run["tree_wall_s"] >= run["wall_s"] > 0
        assert run["cpu_s_runs"] == [run["cpu_s"]]
    jvm = out["kafka"]["jvm"]
    assert jvm["startup_cpu_s"] > 0 and jvm["cleaning_cpu_s"] > 0 and jvm["cleaning_wall_s"] > 0
    assert out["kafka"]["cleaner"]["seconds"] > 0 and out["kafka"]["cleaner"]["thread_cpu_s"] > 0
    figures = out["figures"]
    assert figures["segcompact_marginal_cpu_s"] > 0
    assert set(figures["mb_per_cpu_s"]) == {
        "cleaner_thread",
        "cleaner_thread_proc",
        "cleaner_jvm",
        "segcompact",
        "segcompact_marginal",
    }
    for name, rate in figures["mb_per_cpu_s"].items():
        assert rate is not None and rate > 0, name
    assert len(figures["ratios"]) == 4
    for name, ratio in figures["ratios"].items():
        assert ratio is not None and ratio > 0, name


def test_the_run_of_median_cpu_time_counts() -> None:
    runs = [{"cpu_s": c, "n": i} for i, c in enumerate([31.0, 36.5, 30.2])]
    assert cleaner._median(runs) == {"cpu_s": 31.0, "n": 0, "cpu_s_runs": [31.0, 36.5, 30.2]}
    assert cleaner._median(runs[:2])["n"] == 0  # the lower of two
