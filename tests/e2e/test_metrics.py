"""The job's ``/metrics`` endpoint, scraped from a running continuous job: every figure matches
the tables (``segcompact status``, read at the same pinned time) and the segments read; no key
appears anywhere in it. Scraped from the moment a restarted job listens, it never says less is
pending than ``segcompact sla`` does: its gauges are absent until it has read the tables."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from segcompact.clock import CLOCK_VARIABLE
from segcompact.config import load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.format.batch import V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record
from segcompact.status import read_status
from tests.e2e.harness import Background, run_cli, wait_for
from tests.support import config as support_config
from tests.support.config import write_config
from tests.support.ports import free_port

pytestmark = pytest.mark.spark

NOW_MS = 1_700_000_000_000
KEY = b"customer-key-%d"
Counts = dict[str, int]
BEFORE_READ = {
    "segcompact_metrics_ready",
    "segcompact_query_active",
    *(
        f"segcompact_{n}_{s}"
        for n in ("records_read", "bytes_read", "batches")
        for s in ("total", "created")
    ),
}


def _records(first: int, n: int, *, tombstones: bool = False) -> bytes:
    return build_batch(
        [
            Record(first + i, NOW_MS - 1_000, KEY % (i % 4), None if tombstones else b"v")
            for i in range(n)
        ]
    )


def _segment(directory: Path, base: int, data: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    path.write_bytes(data)
    return path


def _scrape(
    port: int, path: str = "/metrics"
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
        text = response.read().decode()
    assert b"customer-key" not in text.encode(), "a key in the metrics"
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _spark_name(name: str, labels: dict[str, str]) -> str:
    """A partition's gauge as Spark's PrometheusServlet names it (Dropwizard has no labels)."""
    gauge = name.removeprefix("segcompact_")
    return f"metrics_job_driver_segcompact_{gauge}_{labels['topic']}_{labels['partition']}_Value"


def test_metrics_of_a_running_job_match_its_tables(tmp_path: Path, spark_conf_dir: Path) -> None:
    root = tmp_path / "in"
    read = [
        _segment(root / "plain-0", 0, _records(0, 8)),
        _segment(root / "plain-0", 8, _records(8, 4, tombstones=True)),
        _segment(root / "plain-1", 0, _records(0, 5)),
        _segment(root / "bad-0", 0, _records(0, 3)),
    ]
    damaged = bytearray(_records(3, 3))
    damaged[V2_HEADER_SIZE + 3] ^= 0x40
    _segment(root / "bad-0", 3, bytes(damaged))  # read, found corrupt: no bytes counted
    port, ui_port = free_port(), free_port()
    # Spark's own metrics system too, exported by the driver's PrometheusServlet sink.
    sink = "spark.metrics.conf.*.sink.prometheusServlet"
    spark = {
        "spark.ui.enabled": "true",
        "spark.ui.port": str(ui_port),
        "spark.metrics.namespace": "job",
        f"{sink}.class": "org.apache.spark.metrics.sink.PrometheusServlet",
        f"{sink}.path": "/metrics/prometheus",
    }
    path = write_config(tmp_path / "job", [root], rolled_only=False, spark=spark)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f'[metrics]\nport = {port}\nhost = "127.0.0.1"\nspark = true\n')
    config = load_config(path)
    env = {CLOCK_VARIABLE: str(NOW_MS)}

    with Background(
        "run", "--config", path, cwd=tmp_path, spark_conf_dir=spark_conf_dir, env=env
    ) as job:

        def merged() -> tuple[dict[Any, float], dict[Any, float]] | None:
            try:
                samples = _scrape(port)
            except OSError:
                return None  # not listening yet
            try:
                in_spark = _scrape(ui_port, "/metrics/prometheus")
            except (OSError, ValueError):
                return None  # Spark's UI not up, or still answering with a page
            done = samples.get(("segcompact_uncleanable_partitions_count", ()), 0) == 1
            if not done or samples[("segcompact_batches_total", ())] < 1:
                return None
            # The job sets Spark's gauges just after its own registry: wait for them too.
            spark_count = "metrics_job_driver_segcompact_uncleanable_partitions_count_Value"
            synced = in_spark.get((spark_count, (("type", "gauges"),))) == 1 and all(
                (_spark_name(name, dict(labels)), (("type", "gauges"),)) in in_spark
                for name, labels in samples
                if "topic" in dict(labels)
            )
            return (samples, in_spark) if synced else None

        samples, in_spark = wait_for("a scrape after the first batch", merged, running=job)
        rows = read_status(config, NOW_MS, lambda views: pytest.fail("delta-rs reads these tables"))
        assert samples[("segcompact_query_active", ())] == 1
        job.terminate()
        assert job.wait() == 0

    def at(name: str, topic: str, partition: int) -> float:
        value = samples[(name, (("partition", str(partition)), ("topic", topic)))]
        # Spark's sink has the same figure, named as Dropwizard (no labels) and its servlet do.
        spark_name = _spark_name(name, {"topic": topic, "partition": str(partition)})
        assert in_spark[(spark_name, (("type", "gauges"),))] == value, spark_name
        return value

    assert {(r["topic"], r["partition"]) for r in rows} == {("bad", 0), ("plain", 0), ("plain", 1)}
    for r in rows:
        tp = (r["topic"], r["partition"])
        assert at("segcompact_dirty_ratio", *tp) == r["dirty_ratio"], tp
        assert at("segcompact_dirty_bytes", *tp) == r["dirty_bytes"], tp
        assert at("segcompact_tombstones_pending", *tp) == r["tombstones_pending"], tp
        assert at("segcompact_young_records", *tp) == r["young_records"], tp
        assert at("segcompact_uncleanable", *tp) == (r["uncleanable"] is not None), tp
        delay = r["max_compaction_delay_ms"] / 1000
        assert at("segcompact_partition_compaction_delay_secs", *tp) == delay, tp
    assert at("segcompact_tombstones_pending", "plain", 0) == 4  # the four keys deleted
    assert samples[("segcompact_records_read_total", ())] == sum(r["records"] for r in rows)
    assert samples[("segcompact_bytes_read_total", ())] == sum(p.stat().st_size for p in read)
    assert samples[("segcompact_uncleanable_bytes", ())] == sum(
        r["dirty_bytes"] + r["clean_bytes"] for r in rows if r["uncleanable"] is not None
    )
    assert (
        samples[("segcompact_max_clean_time_secs", ())]
        >= samples[("segcompact_batch_duration_secs", ())]
        > 0
    )
    for kind in ("delete", "overwrite"):
        assert samples[("segcompact_deletions_breached", (("kind", kind),))] == 0
    # Every segment is in the first batch, so one materialisation wrote both healthy
    # partitions for the first time: it read their segments and wrote their clean bytes.
    written = {
        (r["topic"], r["partition"]): r["clean_bytes"] for r in rows if r["last_materialized_ms"]
    }
    assert set(written) == {("plain", 0), ("plain", 1)}
    replaced = sum(p.stat().st_size for p in read if p.parent.name in ("plain-0", "plain-1"))
    recopy = samples[("segcompact_cleaner_recopy_percent", ())]
    assert recopy == pytest.approx(100 * sum(written.values()) / replaced)
    assert 0 < recopy < 100  # twelve records of four keys, then five of four: fewer bytes out


def _sla_pending(config: Path, cwd: Path, spark_conf_dir: Path, env: dict[str, str]) -> Counts:
    """``segcompact sla``'s pending erasures, by kind (its deletions and its rounds)."""
    done = run_cli(
        "sla",
        "--config",
        config,
        "--format",
        "json",
        cwd=cwd,
        spark_conf_dir=spark_conf_dir,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    counts = {
        kind: sum(r["status"] == "pending" for r in report[field])
        for kind, field in (("delete", "deletions"), ("overwrite", "overwrites"))
    }
    assert sum(counts.values()) == sum(p["pending"] for p in report["partitions"])
    return counts


def test_a_restarted_job_never_scrapes_as_nothing_pending(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    root = tmp_path / "in"
    keys = [b"customer-key-%d" % i for i in range(5)]
    values = [Record(i, NOW_MS - 2_000, k, b"v") for i, k in enumerate(keys)]
    # Two keys overwritten too: whether their old values are a round yet is sla's to say, and
    # the metric's to agree with.
    values += [Record(5 + i, NOW_MS - 2_000, k, b"w") for i, k in enumerate(keys[:2])]
    _segment(root / "users-0", 0, build_batch(values))
    deletes = [Record(7 + i, NOW_MS - 1_000, k, None) for i, k in enumerate(keys)]
    _segment(root / "users-0", 7, build_batch(deletes))
    port = free_port()
    path = support_config.write_config(
        tmp_path / "job",
        [root],
        rolled_only=False,
        defaults={"gdpr.deletion.sla.ms": 86_400_000, "delete.retention.ms": 172_800_000},
    )
    with open(path, "a", encoding="utf-8") as f:
        f.write(f'[metrics]\nport = {port}\nhost = "127.0.0.1"\n')
    # The clock pinned: every deadline is a day away for as long as the test runs.
    env = {CLOCK_VARIABLE: str(NOW_MS), SECRET_VARIABLE: "a metrics test's secret, long enough"}
    first = run_cli(
        "run", "--config", path, "--once", cwd=tmp_path, spark_conf_dir=spark_conf_dir, env=env
    )
    assert first.returncode == 0, first.stderr
    expected = _sla_pending(path, tmp_path, spark_conf_dir, env)
    assert expected["delete"] == 5, expected

    scrapes: list[dict[Any, float]] = []
    with Background(
        "run", "--config", path, cwd=tmp_path, spark_conf_dir=spark_conf_dir, env=env
    ) as job:

        def ready() -> bool:
            try:
                samples = _scrape(port)
            except OSError:
                return False  # not listening yet
            scrapes.append(samples)
            return samples[("segcompact_metrics_ready", ())] == 1

        wait_for("a scrape after the job read its tables", ready, running=job)
        job.terminate()
        assert job.wait() == 0, job.stderr()
    assert _sla_pending(path, tmp_path, spark_conf_dir, env) == expected  # nothing was due

    for samples in scrapes:
        pending = {
            kind: samples.get(("segcompact_deletions_pending", (("kind", kind),)))
            for kind in expected
        }
        if samples[("segcompact_metrics_ready", ())] == 0:
            # Only what is true before anything is read: nothing read, nothing active.
            assert {n for n, _ in samples} == BEFORE_READ, samples
        else:
            assert pending == expected, (pending, expected)
            age = samples[("segcompact_oldest_pending_deletion_age_secs", (("kind", "delete"),))]
            assert age == 1  # the tombstones' append, a second before the pinned now
    # The server starts before Spark does, the tables are read after it has: the first scrapes
    # come before the first read.
    assert scrapes[0][("segcompact_metrics_ready", ())] == 0
