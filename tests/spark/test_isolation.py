"""Isolation by partition (issue 39): CRC-valid batches whose fields disagree, each in a
partition of its own beside healthy ones, in one run. Each poisoned partition is marked
uncleanable with its file, the batch's position and base offset, and why; the run names them
(its exit code); the healthy partitions' state and output are exactly the reference model's,
and the poisoned ones keep what came before the bad batch."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from segcompact.clock import ManualClock
from segcompact.config import load_config
from segcompact.format.attributes import BatchAttr, Compression
from segcompact.format.batch import assemble_batch, build_batch
from segcompact.format.control import COMMIT_KEY
from segcompact.format.record import Record, encode_record
from segcompact.format.segment import SegmentReader
from segcompact.publication import new_version_directory
from segcompact.samples import generate_partition
from segcompact.spark.job import Compactor
from segcompact.spark.materialize import Plan, write_partitions
from segcompact.spark.table_reader import SparkSql
from segcompact.spark.tables import RECORD_FIELDS
from segcompact.status import read_status
from segcompact.storage import LocalInputFile, Storage
from tests.e2e.harness import (
    model_of,
    model_output,
    model_state,
    output_records,
    publications,
    state_table,
)
from tests.support.config import write_config
from tests.support.model import read_log_records

pytestmark = pytest.mark.spark

NOW_MS = 1_800_000_000_000
INT64_MAX = 2**63 - 1
BASE = 10  # every poisoned batch's base offset: after a good batch of offsets 0..9


def _poison(
    deltas: list[int],
    *,
    last_delta: int = 2,
    count: int | None = None,
    base_ts: int = 5_000,
    ts_deltas: list[int] | None = None,
    keys: list[bytes | None] | None = None,
    attributes: int = 0,
    cut: int = 0,
) -> bytes:
    """A CRC-valid batch at :data:`BASE` of records at ``deltas``, whatever its header says."""
    ts_deltas = ts_deltas or [0] * len(deltas)
    keys = keys or [b"p%d" % i for i in range(len(deltas))]
    body = b"".join(
        encode_record(Record(BASE + d, base_ts + t, k, b"x"), BASE, base_ts)
        for d, t, k in zip(deltas, ts_deltas, keys, strict=True)
    )
    return assemble_batch(
        body[: len(body) - cut],
        len(deltas) if count is None else count,
        base_offset=BASE,
        last_offset=BASE + last_delta,
        base_timestamp=base_ts,
        max_timestamp=base_ts,
        attributes=attributes,
    )


# topic: (the poisoned batch, what its reason says)
POISONS: dict[str, tuple[bytes, str]] = {
    "past-the-batch": (_poison([0, 1, 5000]), "offset delta 5000 is past the batch's last"),
    "falling": (_poison([0, 2, 1]), "offset delta 1 is not above the previous record's 2"),
    "negative": (_poison([-1, 0]), "offset delta -1 is negative"),
    "count-above": (_poison([0, 1, 2], count=4), "varint runs past the end of the data"),
    "count-below": (_poison([0, 1, 2], count=2), "remain after the 2 records"),
    "cut": (_poison([0, 1, 2], cut=2), "record 2 claims"),
    "control": (
        _poison([0, 1], keys=[COMMIT_KEY, COMMIT_KEY], attributes=BatchAttr.CONTROL),
        "control batch holds 2 records",
    ),
    "horizon": (
        _poison([0], base_ts=INT64_MAX, attributes=BatchAttr.DELETE_HORIZON),
        "delete horizon 9223372036854775807 ms is out of range",
    ),
    "time-overflow": (
        _poison([0, 1], base_ts=INT64_MAX - 1, ts_deltas=[0, 5]),
        "overflows 64 bits",
    ),
    # Flagged zstd, stored plain (an empty batch is not compressed).
    "codec": (_poison([0], count=0, attributes=Compression.ZSTD), "zstd data is corrupt"),
}


def _good(topic: bytes) -> bytes:
    records = [Record(i, 1_000 + i, b"k%d" % (i % 4), topic + b"%d" % i) for i in range(BASE)]
    return build_batch(records, compression=Compression.LZ4)


def _partition_of(segment: Path) -> tuple[str, int]:
    topic, partition = segment.parent.name.rsplit("-", 1)
    return topic, int(partition)


def test_a_poisoned_partition_stops_alone(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "in"
    rnd = random.Random(39)
    healthy: list[Path] = []
    for partition, (codec, transactions) in enumerate(
        [(Compression.NONE, False), (Compression.ZSTD, True), (Compression.GZIP, False)]
    ):
        directory = root / f"healthy-{partition}"
        for segment in generate_partition(rnd, codec=codec, transactions=transactions):
            healthy.append(segment.write(directory))
    prefixes = tmp_path / "prefixes"  # what each poisoned partition holds before its bad batch
    for topic, (batch, _) in POISONS.items():
        good = _good(topic.encode())
        for directory, data in ((root, good + batch), (prefixes, good)):
            (directory / f"{topic}-0").mkdir(parents=True)
            (directory / f"{topic}-0" / f"{0:020d}.log").write_bytes(data)
    config = load_config(write_config(tmp_path / "job", [root], rolled_only=False))

    summary = Compactor(spark, config, ManualClock(NOW_MS)).run_once()

    # Each poisoned partition, and only those, uncleanable since this run, saying where and why.
    assert set(summary.found_uncleanable) == {(topic, 0) for topic in POISONS}
    failure = summary.failure()
    assert failure is not None
    status = {
        (r["topic"], r["partition"]): r
        for r in read_status(config, NOW_MS, partial(SparkSql, spark))
    }
    for topic, (_, reason) in POISONS.items():
        line = status[(topic, 0)]["uncleanable"]
        path = root / f"{topic}-0" / f"{0:020d}.log"
        where = (
            f"{path}: corrupt batch at position {len(_good(topic.encode()))}, base offset {BASE}"
        )
        assert line is not None and line.startswith(where) and reason in line, (topic, line)
        assert f"{topic}-0: {line}" in failure
    assert all(status[("healthy", p)]["uncleanable"] is None for p in range(3))

    # The healthy partitions exactly as the model has them, state and published output; the
    # poisoned ones hold their records before the bad batch, and are not published.
    records = [
        r
        for path in [*healthy, *prefixes.glob("*/*.log")]
        for r in read_log_records(LocalInputFile(path), *_partition_of(path))
    ]
    model = model_of(config, records, NOW_MS)
    assert state_table(spark, config) == model_state(model)
    assert summary.materialized == {("healthy", p) for p in range(3)}
    expected = {tp: rows for tp, rows in model_output(model).items() if tp[0] == "healthy"}
    assert output_records(config) == expected


def _plan(out: Path, topic: str, log_end_offset: int) -> Plan:
    return Plan(
        topic,
        0,
        1,
        0,
        log_end_offset,
        Compression.NONE,
        1 << 20,
        4096,
        str(out),
        Storage(),
        new_version_directory(topic, 0, 1),
        ("forced",),
        False,
        NOW_MS,
        0,
        0,
    )


def _rows(topic: str, offsets: list[int]) -> list[dict[str, Any]]:
    when = datetime.fromtimestamp(1_000, UTC)
    return [
        {
            "topic": topic,
            "partition": 0,
            "key": b"k%d" % o,
            "offset": o,
            "timestamp": when,
            "timestampType": 0,
            "value": b"v",
            "headers": [],
            "order_value": None,
            "tombstone": False,
            "delete_horizon": None,
            "raw": False,
        }
        for o in offsets
    ]


def test_a_partition_whose_output_cannot_be_written_fails_alone(tmp_path: Path) -> None:
    """State rows the writer refuses (one past the partition's log end offset) in a task that
    writes another partition after them: the first's result says why, the second is written."""
    out = tmp_path / "out"
    plans = {("bad", 0): _plan(out, "bad", 3), ("good", 0): _plan(out, "good", 10)}
    schema = to_arrow_schema(
        T.StructType([*RECORD_FIELDS, T.StructField("raw", T.BooleanType())]), timezone="UTC"
    )
    rows = _rows("bad", [0, 1, 5]) + _rows("good", [0, 2, 4])
    batches = [pa.RecordBatch.from_pylist(rows[i : i + 2], schema=schema) for i in range(0, 6, 2)]
    results = {r["topic"]: r for b in write_partitions(iter(batches), plans) for r in b.to_pylist()}
    # Its rows are encoded as they come or, as here, when its last segment is closed.
    assert results["bad"]["failed"] == (
        "output not written (closing its last segment): ValueError: record at offset 5 is past "
        "the log end offset 3"
    )
    assert results["bad"]["files"] is None
    good = results["good"]
    assert good["failed"] is None and good["records"] == 3
    directory = out / plans[("good", 0)].directory
    logs = sorted(directory.glob("*.log"))
    written = [
        r.offset for log in logs for b in SegmentReader(LocalInputFile(log)) for r in b.records()
    ]
    assert written == [0, 2, 4]


def test_a_partition_whose_state_cannot_be_written_is_marked_uncleanable(
    spark: SparkSession, tmp_path: Path
) -> None:
    """State that disagrees with the partitions table (a row past the log end offset, as a
    hand-edited or damaged table may hold): that partition is marked uncleanable and keeps its
    published version; the other is published."""
    root = tmp_path / "in"
    for topic in ("a", "b"):
        (root / f"{topic}-0").mkdir(parents=True)
        (root / f"{topic}-0" / f"{0:020d}.log").write_bytes(_good(topic.encode()))
    config = load_config(write_config(tmp_path / "job", [root], rolled_only=False))
    compactor = Compactor(spark, config, ManualClock(NOW_MS))
    compactor.run_once()
    before = publications(config)
    assert {tp: p.version for tp, p in before.items()} == {("a", 0): 1, ("b", 0): 1}
    spark.sql(f"UPDATE delta.`{config.state.table}` SET offset = offset + 1000 WHERE topic = 'a'")

    results = compactor.materializer.run(force=True)

    assert [(r["topic"], r["partition"], r["version"]) for r in results] == [("b", 0, 2)]
    reason = compactor.materializer.failed[("a", 0)]
    assert reason.startswith("output not written (") and "past the log end offset 10" in reason
    status = {r["topic"]: r for r in read_status(config, NOW_MS, partial(SparkSql, spark))}
    assert status["a"]["uncleanable"] == reason and status["b"]["uncleanable"] is None
    after = publications(config)
    assert after[("a", 0)] == before[("a", 0)] and after[("b", 0)].version == 2
    assert compactor.materializer.run(force=True)[0]["topic"] == "b"  # a is skipped from now on
