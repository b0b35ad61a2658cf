"""A micro-batch's one held scan (``spark/scan.py``): each row's kind, as the merge reads it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from segcompact.config import load_config
from segcompact.samples import generate_partition
from segcompact.spark.frames import local_frame
from segcompact.spark.scan import Kind, scan
from segcompact.spark.source import register
from segcompact.spark.tables import PENDING_SCHEMA, YOUNG_SCHEMA
from segcompact.storage import LocalInputFile
from tests.support import config as support_config
from tests.support.model import LogRecord, read_log_records

pytestmark = pytest.mark.spark

LOG_START = 30  # of ("direct", 0); ("lagged", 0) is not known yet: no log start


def expected_kind(r: LogRecord, lagged: bool, log_start: int) -> Kind | None:
    """The kind a record is given, from the rules the merge follows."""
    if r.is_transactional:
        return Kind.TRANSACTION  # decided by its marker, below the log start too
    if r.is_control or r.key is None or r.offset < log_start:
        return None  # only counted
    return Kind.YOUNG if lagged else Kind.WINNER


def test_each_row_of_a_batch_is_scanned_as_its_kind(spark: SparkSession, tmp_path: Path) -> None:
    register(spark)
    rnd = random.Random(41)
    records: list[LogRecord] = []
    segments = []
    for topic in ("direct", "lagged"):
        for seg in generate_partition(rnd, transactions=True):
            path = seg.write(tmp_path / "in" / f"{topic}-0")
            segments.append((topic, seg.base_offset))
            records += read_log_records(LocalInputFile(path), topic, 0)
    config = load_config(
        support_config.write_config(
            tmp_path, [tmp_path / "in"], topics={"lagged": {"min.compaction.lag.ms": 60_000}}
        )
    )
    batch = (
        spark.read.format("kafka-segments")
        .option("rolledOnly", "false")
        .option("summaries", "true")
        .load(str(tmp_path / "in"))
    )
    starts = local_frame(
        spark, [("direct", 0, LOG_START)], "topic string, partition int, log_start_offset long"
    )
    scanned = scan(batch, starts, config.topics, config.defaults)
    try:
        young = scanned.records(Kind.YOUNG)
        winners = scanned.records(Kind.WINNER)
        transactional = scanned.transactional()
        assert young.columns == winners.columns == YOUNG_SCHEMA.fieldNames()
        assert set(transactional.columns) == set(PENDING_SCHEMA.fieldNames()) - {"commit"}
        by_kind = {
            kind: sorted((r.topic, r.offset) for r in frame.select("topic", "offset").collect())
            for kind, frame in (
                (Kind.WINNER, winners),
                (Kind.YOUNG, young),
                (Kind.TRANSACTION, transactional),
            )
        }
        kinds = [k.kind for k in scanned.rows.select("kind").collect()]
    finally:
        scanned.release()
    expected: dict[Kind | None, list[tuple[str, int]]] = {k: [] for k in [*by_kind, None]}
    for r in records:
        start = LOG_START if r.topic == "direct" else 0
        expected[expected_kind(r, r.topic == "lagged", start)].append((r.topic, r.offset))
    # The log holds every kind, and rows that are only counted (keyless, below the log start).
    assert all(expected.values())
    assert by_kind == {k: sorted(v) for k, v in expected.items() if k is not None}
    assert kinds.count(None) == len(expected[None])
    assert kinds.count(Kind.SUMMARY) == len(segments)
    assert len(kinds) == len(records) + len(segments)  # one row each: nothing lost or doubled
