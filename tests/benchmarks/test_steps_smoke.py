"""The steps benchmark runs on a tiny log: every step has a figure, they add up to the whole
process tree's CPU and their percents to 100; timings are not checked. Its parts that need no
run are checked on made-up figures."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.humanize import iso_time
from tests.benchmarks import steps
from tests.benchmarks.steps_probe import (
    Series,
    process_kind,
    sample_class,
    spans,
    thread_kind,
)
from tests.support.keyed_log import generate


@pytest.mark.benchmark
@pytest.mark.spark
def test_steps_benchmark_smoke(tmp_path: Path) -> None:
    log = generate(tmp_path / "logs", 1, 2, 1000, 0.25)
    args = ["--log", log.root, "--segment-mib", "0.25", "--repeat", "1"]
    out = steps.main([*args, "--workdir", str(tmp_path / "work")])

    assert out["log"]["input_bytes"] > 0 and out["log"]["segments"] >= 2
    (code,) = out["codes"].values()
    (run,) = code["runs"]
    assert run["cpu_s"] > 0 and run["jfr_samples"] > 0
    assert set(run["steps"]) == set(steps.STEPS)
    assert sum(run["steps"].values()) == pytest.approx(run["cpu_s"])
    # Each process kind was seen doing its part.
    for step in ("start", "decode", "reduce", "encode", "JIT"):
        assert run["steps"][step] > 0, step
    assert run["steps"]["merge"] + run["steps"]["commit"] + run["steps"]["write"] > 0
    assert sum(run["other"][p] for p in steps.OTHER) == pytest.approx(run["steps"]["other"])
    assert run["cpu_s"] == max(run["kernel_cpu_s"], run["polled_cpu_s"])
    summary = code["summary"]
    assert set(summary["cpu_s"]) == set(summary["percent"]) == set(steps.STEPS)
    assert sum(summary["percent"].values()) == pytest.approx(100, abs=0.01)
    assert summary["total_cpu_s"] == run["cpu_s"]


def test_the_log_gives_each_step_its_span() -> None:
    end = datetime(2026, 11, 28, 2, 37, 6, 788000, tzinfo=UTC).timestamp()
    text = (
        "26/11/28 02:36:52 WARN NativeCodeLoader: Unable to load native-hadoop library\n"
        f"{iso_time(round(end * 1000))} segcompact: segcompact.spark.merge: decode and reduce: "
        "2.0 s\n"
        f"{iso_time(round(end * 1000))} segcompact: segcompact.spark.materialize: "
        "materialise 2 partitions: write: 0.6 s\n"
    )
    assert spans(text) == [
        ("decode and reduce", pytest.approx(end - 2.0), pytest.approx(end)),
        ("materialise 2 partitions: write", pytest.approx(end - 0.6), pytest.approx(end)),
    ]


def test_cpu_within_spans_is_shared_by_time() -> None:
    series = Series(
        times=[0.0, 1.0, 2.0, 3.0],
        cpu=[{"workers": 0.0}, {"workers": 1.0}, {"workers": 3.0}, {"workers": 3.0, "jvm": 1.0}],
    )
    assert series.within("workers", [(0.0, 3.0)]) == pytest.approx(3.0)
    assert series.within("workers", [(1.5, 2.0)]) == pytest.approx(1.0)  # half of 2.0
    assert series.within("workers", [(0.0, 0.5), (2.5, 3.0)]) == pytest.approx(0.5)
    assert series.within("jvm", [(0.0, 2.0)]) == 0.0
    assert series.at(1.5, "workers") == 3.0  # the first poll at or after
    assert series.at(9.0, "jvm") == 1.0
    assert series.total_at(2.5) == 4.0


def test_processes_and_threads_by_kind() -> None:
    java = "/usr/lib/jvm/java-17/bin/java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell"
    assert process_kind(java, 10, 1) == "jvm"
    assert process_kind("/usr/bin/java -cp x org.apache.spark.launcher.Main", 10, 1) == "launcher"
    assert process_kind("/v/bin/python -m segcompact.cli run --once", 1, 1) == "driver"
    assert process_kind("/v/bin/python -m pyspark.daemon", 11, 1) == "workers"
    assert process_kind("chmod 644 /x", 12, 1) == "other"
    assert thread_kind("C1 CompilerThre") == "jit"
    assert thread_kind("GC Thread#1") == "gc" == thread_kind("VM Thread")
    assert thread_kind("JFR Recorder Th") == "jfr"
    assert thread_kind("Executor task l") == "java"


def test_a_sample_is_classed_by_its_innermost_known_step() -> None:
    commit = "org.apache.spark.sql.delta.OptimisticTransactionImpl.commit(Seq, Operation) line: 9"
    parquet = "org.apache.parquet.hadoop.ParquetWriter.write(Object) line: 3"
    merge = "org.apache.spark.sql.delta.commands.MergeIntoCommand.run(SparkSession) line: 1"
    assert sample_class([parquet, commit, merge]) == "commit"  # a checkpoint's Parquet
    assert sample_class([parquet, merge]) == "write"
    assert sample_class(["java.lang.String.hashCode() line: 1", merge]) == "merge"
    assert sample_class(["java.lang.String.hashCode() line: 1"]) is None


def test_a_jvm_sample_goes_to_its_frames_row_else_its_steps() -> None:
    plain = ["java.lang.String.hashCode() line: 1"]
    parquet = ["org.apache.parquet.hadoop.ParquetWriter.write(Object) line: 3"]
    python = ["org.apache.spark.api.python.PythonRunner$$anon$2.read() line: 7"]
    assert steps.java_class(plain, "decode and reduce") == "scan (JVM)"
    assert steps.java_class(python, None) == "scan (JVM)"
    assert steps.java_class(parquet, "decode and reduce") == "write"
    assert steps.java_class(plain, "materialise: record") == "merge"
    assert steps.java_class(plain, "state append") == "merge"
    assert steps.java_class(plain, "tables") == "tables"
    assert steps.java_class(plain, "query") == steps.java_class(plain, None) == "other"


@given(
    steps=st.lists(
        st.tuples(st.floats(0.01, 5), st.floats(0, 3)), min_size=1, max_size=20
    ),  # (poll interval, CPU spent in it)
    cuts=st.lists(st.floats(0, 1), max_size=5),
)
def test_cpu_within_spans_that_tile_the_run_adds_up_to_all_of_it(
    steps: list[tuple[float, float]], cuts: list[float]
) -> None:
    times, cpu = [0.0], [{"workers": 0.0}]
    for gap, spent in steps:
        times.append(times[-1] + gap)
        cpu.append({"workers": cpu[-1]["workers"] + spent})
    series = Series(times=times, cpu=cpu)
    end = times[-1]
    edges = sorted({0.0, end, *(c * end for c in cuts)})
    tiles = list(pairwise(edges))
    total = cpu[-1]["workers"]
    assert sum(series.within("workers", [t]) for t in tiles) == pytest.approx(total, abs=1e-6)
    for tile in tiles:
        assert 0 <= series.within("workers", [tile]) <= total + 1e-9
