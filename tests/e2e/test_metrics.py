"""The job's ``/metrics`` endpoint, scraped from a running continuous job: every figure matches
the tables (``segcompact status``, read at the same pinned time) and the segments read; no key
appears anywhere in it."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from segcompact.clock import CLOCK_VARIABLE
from segcompact.config import load_config
from segcompact.format.batch import V2_HEADER_SIZE, build_batch
from segcompact.format.record import Record
from segcompact.status import read_status
from tests.e2e.harness import Background, wait_for
from tests.support.config import write_config
from tests.support.kafka_broker import free_port

pytestmark = pytest.mark.spark

NOW_MS = 1_700_000_000_000
KEY = b"customer-key-%d"


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
        rows = read_status(config, NOW_MS, lambda: pytest.fail("delta-rs reads these tables"))
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
