"""The partitions benchmark on 16 tiny partitions, Kafka's cleaner beside it: every command ran
and every figure is there, segcompact's output is the model's after each pass and the same as
the cleaner's; timings are not checked. Then the figures and targets from made-up runs."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segcompact.format.attributes import Compression
from segcompact.format.logdir import parse_segment_file
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile
from tests.benchmarks import partitions
from tests.interop.compacted import segment_logs
from tests.support.jvm import kafka_jars_available, missing_kafka_message
from tests.support.small_partitions import SmallPartitions

pytestmark = pytest.mark.benchmark

N = 16
STEPS = {"first", "steady", "materialize", "status", "purge", "idle"}


@pytest.mark.spark
@pytest.mark.kafka
def test_partitions_benchmark_smoke(tmp_path: Path, spark_conf_dir: Path) -> None:
    if not kafka_jars_available():
        # Not a skip: the test command fetches Kafka, so its absence is a failure.
        pytest.fail(missing_kafka_message())
    args = ["--partitions", str(N), "--reference-partitions", "0", "--cleaner-up-to", str(N)]
    out = partitions.main(
        [*args, "--workdir", str(tmp_path), "--spark-conf-dir", str(spark_conf_dir)]
    )

    [size] = out["sizes"]
    assert size["partitions"] == N and size["log"]["rolled_segments"] == 2 * N
    steps = size["steps"]
    assert set(steps) == STEPS
    for name, s in steps.items():
        assert s["exit_code"] == 0 and s["stragglers_killed"] == 0, name
        assert s["cpu_s"] > 0 and s["wall_s"] > 0 and s["cpu_ms_per_partition"] > 0, name
        assert s["marginal_cpu_ms_per_partition"] is None, name  # no size before
        assert s["open_files"]["all"] >= s["open_files"]["one_process"] > 0, name
        assert s["peak_rss_mib"]["python driver"] > 0, name
    for name in ("first", "steady", "idle"):
        assert steps[name]["peak_rss_mib"]["jvm"] > 0, name
    for name in ("first", "steady"):
        # Every partition published again, the state appended, Delta commits made.
        written = steps[name]["files_written"]
        assert written["output"] >= N and written["data"] > 0 and written["delta_log"] > 0, name
        assert size["check"][name]["ok"], size["check"][name]
        assert size["check"][name]["partitions"] == N
        assert 0 < size["check"][name]["tombstones"] < size["check"][name]["kept_records"] <= N * 20
    # The passes left nothing due, and the read-only and idle commands wrote no data.
    assert steps["materialize"]["said"] == steps["purge"]["said"] == "nothing due"
    assert steps["status"]["partitions_listed"] == N
    for name in ("materialize", "status", "purge", "idle"):
        assert steps[name]["files_written"]["data"] == 0, name
        assert steps[name]["files_written"]["output"] == 0, name

    kafka = size["kafka"]
    assert kafka["check"]["ok"], kafka["check"]
    assert kafka["check"]["kept_records"] == size["check"]["first"]["kept_records"]
    assert sorted(s["log"] for s in kafka["cleaner"]["stats"]) == sorted(
        f"{partitions.TOPIC}-{p}" for p in range(N)
    )
    assert kafka["jvm"]["cleaning_cpu_s"] > 0 and kafka["ratio_vs_jvm"] > 0

    targets = {t["target"]: t["met"] for t in out["targets"]}
    assert len(targets) == 5
    unknown = [t for t in out["targets"] if t["met"] is None]
    assert len(unknown) == 3 and all(t["measured"] == "not run" for t in unknown)


@settings(max_examples=15)
@given(
    partitions=st.integers(1, 4),
    records=st.integers(1, 80),
    keys=st.integers(1, 6),
    tombstones=st.sampled_from([0.0, 0.3, 0.9]),
)
def test_small_partitions_are_rolled_lz4_segments(
    partitions: int, records: int, keys: int, tombstones: float
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shape = {"partitions": partitions, "records": records, "keys": keys}
        log = SmallPartitions(root / "log", "t", **shape, tombstones=tombstones, seed=7)
        again = SmallPartitions(root / "again", "t", **shape, tombstones=tombstones, seed=7)
        log.write(2)
        again.write(2)
        log.roll(2)
        for p in range(partitions):
            logs = segment_logs(log.directory(p))
            assert [parse_segment_file(str(s))[0] for s in logs] == [i * records for i in range(4)]
            assert logs[-1].stat().st_size == 0  # the new active segment
            batches = [b for s in logs for b in SegmentReader(LocalInputFile(s))]
            assert {b.compression for b in batches} == {Compression.LZ4}
            got = [r for b in batches for r in b.records()]
            assert [r.offset for r in got] == list(range(3 * records))
            ks = {int(r.key[9:]) for r in got if r.key is not None}
            assert {k % partitions for k in ks} == {p} and len(ks) <= keys  # k mod partitions
            if tombstones == 0:
                assert all(r.value for r in got)
            # The same seed draws the same segments, whatever else is written.
            for s in logs[:2]:
                assert s.read_bytes() == (again.directory(p) / s.name).read_bytes()


def _step(cpu: float, wall: float = 1.0, jvm: float = 500.0) -> dict[str, Any]:
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "peak_rss_mib": {"jvm": jvm, "python driver": 100.0},
        "open_files": {"all": 900, "one_process": 800},
        "files_written": {"delta_log": 12, "data": 7, "output": 40, "checkpoint": 6},
    }


def _size(n: int, cpu: float, jvm: float, *, status_s: float, ok: bool = True) -> dict[str, Any]:
    steps = {name: _step(cpu, jvm=jvm) for name in ("first", "steady")}
    steps |= {name: _step(1.0, wall=status_s) for name in ("materialize", "status", "purge")}
    steps["idle"] = _step(6.0)
    reference = {
        "log": {"partitions": 2},
        "steps": {p: _step(cpu / 3, jvm=400.0) for p in ("first", "steady")},
    }
    checks = {"first": {"ok": True}, "steady": {"ok": ok}}
    return {"partitions": n, "steps": steps, "reference": reference, "check": checks}


def test_figures_and_targets() -> None:
    sizes = [
        _size(4096, 40.96, 500.0 + 4094 / 1024, status_s=0.5),
        _size(16384, 163.84, 500.0 + 16382 * 3 / 1024, status_s=2.5),
    ]
    partitions.figures(sizes)
    first = sizes[1]["steps"]["first"]
    assert first["cpu_ms_per_partition"] == pytest.approx(10.0)
    assert first["marginal_cpu_ms_per_partition"] == pytest.approx(10.0)
    same = sizes[0]["same_bytes"]["steady"]
    assert same["cpu_ratio"] == pytest.approx(3.0)
    assert same["cpu_ms_per_extra_partition"] == pytest.approx(1000 * (40.96 - 40.96 / 3) / 4094)
    growth = sizes[0]["rss_kib_per_extra_partition"]
    assert growth["jvm"] == pytest.approx(1024 * (100 + 4094 / 1024) / 4094)
    assert growth["python driver"] == 0

    met = [t["met"] for t in partitions.targets(sizes)]
    # 10 ms a partition; 3x the same bytes; 16,384 work but the JVM grows by 9 kB a partition;
    # status 2.5 s; idle 6 CPU s.
    assert met == [True, False, False, False, True]
    sizes[1]["check"]["steady"]["ok"] = False
    assert "WRONG" in partitions.targets(sizes)[2]["measured"]
