"""The ``kafka-segments`` source: records as Spark's Kafka source names them, one summary row per
segment, rolled-only discovery, restarts from the checkpoint and corrupt segments."""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from segcompact.compaction.reduce import SegmentReducer
from segcompact.compaction.rules import Rankings
from segcompact.discovery import SegmentFile
from segcompact.errors import ConfigError
from segcompact.format.arrow import Selection
from segcompact.format.attributes import Compression
from segcompact.format.attributes import TimestampType as KafkaTimestampType
from segcompact.format.batch import CRC_OFFSET, build_batch
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter
from segcompact.manifest import Manifest, ManifestEntry
from segcompact.spark.source import (
    SPARK_SCHEMA,
    SourceOptions,
    pack,
    read_segments,
    register,
    runs,
)
from segcompact.storage import LocalOutputDirectory, Storage

pytestmark = pytest.mark.spark

# The columns of Spark's own Kafka source (KafkaRecordToRowConverter.kafkaSchema(true)).
KAFKA_SOURCE_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(
                StructType([StructField("key", StringType()), StructField("value", BinaryType())])
            ),
        ),
    ]
)


LOG_APPEND_MS = 1_800_000_000_000


@pytest.fixture(scope="module", autouse=True)
def _registered(spark: SparkSession) -> None:
    register(spark)


# --- writing segments -----------------------------------------------------------------------


def _records(first: int, count: int, tag: str = "v") -> list[Record]:
    return [
        Record(
            first + i,
            1_700_000_000_000 + first + i,
            b"key-%d" % (i % 3),
            None if i == 1 else f"{tag}-{first + i}".encode(),
            (("trace", b"t%d" % i), ("h", None)) if i % 2 == 0 else (),
        )
        for i in range(count)
    ]


def _segment(root: Path, topic: str, partition: int, base: int, *batches: bytes) -> Path:
    directory = root / f"{topic}-{partition}"
    directory.mkdir(parents=True, exist_ok=True)
    with SegmentWriter(LocalOutputDirectory(directory), base) as writer:
        for batch in batches:
            writer.append(batch)
    return directory / writer.log_name


def _short(path: str) -> str:
    return "/".join(Path(path).parts[-2:])


def _ts(ms: int) -> datetime:
    # The session renders timestamps in UTC (see segcompact.spark.session) as naive datetimes.
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def _by_offset(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=lambda row: row[4])


def _kafka_row(topic: str, partition: int, r: Record, ts_type: int = 0) -> tuple[Any, ...]:
    headers = [Row(key=k, value=v) for k, v in r.headers]
    return (r.key, r.value, topic, partition, r.offset, _ts(r.timestamp), ts_type, headers)


# --- running the stream ---------------------------------------------------------------------


@dataclass
class Run:
    batches: list[tuple[int, int]] = field(default_factory=list)  # (batch id, rows)
    rows: list[Row] = field(default_factory=list)

    @property
    def records(self) -> list[Row]:
        return [r for r in self.rows if not r.segment_end]

    @property
    def summaries(self) -> dict[str, Row]:
        """Summary rows by ``<topic>-<partition>/<file>``."""
        return {_short(r.segment): r for r in self.rows if r.segment_end}

    def kafka_rows(self, topic: str, partition: int) -> list[tuple[Any, ...]]:
        return _by_offset(
            tuple(r[f.name] for f in KAFKA_SOURCE_SCHEMA.fields)
            for r in self.records
            if (r.topic, r.partition) == (topic, partition)
        )


def _available_now(spark: SparkSession, root: Path, checkpoint: Path, **options: str) -> Run:
    """The rows of an availableNow query, with the summary rows (as the job reads) unless
    ``summaries="false"``."""
    run = Run()
    options = {"summaries": "true", **options}

    def collect(df: Any, batch_id: int) -> None:
        rows = df.collect()
        run.batches.append((batch_id, len(rows)))
        run.rows.extend(rows)

    reader = spark.readStream.format("kafka-segments")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load(str(root))
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(300)
    finally:
        query.stop()
    return run


def _layout(tmp_path: Path) -> tuple[Path, dict[str, list[Record]]]:
    """orders-0: segments 0, 10 (rolled) and 20 (active); pay-ments-3: 0 (rolled), 5 (active)."""
    root = tmp_path / "logs"
    written = {
        "orders-0/0": _records(0, 5),
        "orders-0/10": _records(10, 4),
        "orders-0/20": _records(20, 3),
        "pay-ments-3/0": _records(0, 3, "p"),
        "pay-ments-3/5": _records(5, 2, "p"),
    }
    # Segment 0 ends with an empty batch (offsets 5..9), as Kafka's cleaner leaves them.
    _segment(
        root,
        "orders",
        0,
        0,
        build_batch(written["orders-0/0"][:2]),
        build_batch(written["orders-0/0"][2:], compression=Compression.GZIP),
        build_batch([], base_offset=5, last_offset=9),
    )
    _segment(
        root,
        "orders",
        0,
        10,
        build_batch(
            written["orders-0/10"],
            timestamp_type=KafkaTimestampType.LOG_APPEND_TIME,
            max_timestamp=LOG_APPEND_MS,
        ),
    )
    _segment(root, "orders", 0, 20, build_batch(written["orders-0/20"]))
    _segment(root, "pay-ments", 3, 0, build_batch(written["pay-ments-3/0"]))
    _segment(root, "pay-ments", 3, 5, build_batch(written["pay-ments-3/5"]))
    return root, written


def _manifest(tmp_path: Path) -> dict[str, str]:
    return {"manifest": str(tmp_path / "manifest")}


# --- tests ----------------------------------------------------------------------------------


def test_schema_shares_the_kafka_source_columns(spark: SparkSession, tmp_path: Path) -> None:
    root, _ = _layout(tmp_path)
    df = spark.readStream.format("kafka-segments").load(str(root))
    assert df.isStreaming
    assert df.schema == SPARK_SCHEMA
    for kafka_field in KAFKA_SOURCE_SCHEMA.fields:
        assert df.schema[kafka_field.name].dataType == kafka_field.dataType, kafka_field.name
    assert df.columns == [
        *KAFKA_SOURCE_SCHEMA.fieldNames(),
        "attributes",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "is_transactional",
        "is_control",
        "delete_horizon",
        "batch_base_offset",
        "batch_last_offset",
        "magic",
        "compression",
        "order_value",
        "bad_version",
        "tombstone",
        "segment",
        "segment_base",
        "segment_end",
        "segment_bytes",
        "error",
        "folded_records",
        "one_per_key",
        "reduced_segments",
        "state_file",
    ]


def test_available_now_reads_rolled_segments_as_kafka_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, written = _layout(tmp_path)

    run = _available_now(spark, root, tmp_path / "checkpoint", **_manifest(tmp_path))

    assert len(run.batches) == 1
    assert run.kafka_rows("orders", 0) == _by_offset(
        [_kafka_row("orders", 0, r) for r in written["orders-0/0"]]
        + [
            # LogAppendTime: every record carries the batch's max timestamp.
            _kafka_row("orders", 0, Record(r.offset, LOG_APPEND_MS, r.key, r.value, r.headers), 1)
            for r in written["orders-0/10"]
        ]
    )
    assert run.kafka_rows("pay-ments", 3) == _by_offset(
        _kafka_row("pay-ments", 3, r) for r in written["pay-ments-3/0"]
    )
    assert {(r.segment_end, r.segment_bytes, r.error) for r in run.records} == {(False, None, None)}
    assert {r.segment for r in run.records} == {None}  # the file is on the summary row
    assert {r.segment_base for r in run.records if r.topic == "orders"} == {0, 10}


def test_compaction_option_keeps_what_can_still_win_and_counts_the_rest(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, _ = _layout(tmp_path)
    plain = _available_now(spark, root, tmp_path / "plain", manifest=str(tmp_path / "m1"))
    options = {"manifest": str(tmp_path / "m2"), "compaction": Rankings().to_json()}

    run = _available_now(spark, root, tmp_path / "reduced", **options)

    # orders-0/0 holds keys 0, 1, 2, 0, 1 at offsets 0..4 and orders-0/10 keys 0, 1, 2, 0 at
    # 10..13, reduced together: the latest of each stays, the count of the others and the
    # earliest timestamp on the last summary row.
    kept = {(r.topic, r.segment_base): [] for r in run.records}
    for r in sorted(run.records, key=lambda r: r.offset):
        kept[(r.topic, r.segment_base)].append(r.offset)
    assert kept == {
        ("orders", 10): [11, 12, 13],
        ("pay-ments", 0): [0, 1, 2],
    }
    folded = {(r.topic, r.batch_base_offset): r.folded_records for r in run.rows if r.segment_end}
    assert folded == {("orders", 0): 0, ("orders", 10): 6, ("pay-ments", 0): 0}
    assert {r.folded_records for r in plain.rows} == {None}
    assert len(run.records) + sum(folded.values()) == len(plain.records)
    summary = next(r for r in run.rows if r.segment_end and r.batch_base_offset == 10)
    assert summary.timestamp == datetime.fromtimestamp(1_700_000_000, UTC).replace(tzinfo=None)
    assert summary.one_per_key is True and summary.reduced_segments == 2  # one round
    assert {r.one_per_key for r in plain.rows} == {None}
    # The rows kept are the plain stream's, classified under the default rules (``plain``
    # does not know them: null there).
    rules = ("order_value", "bad_version", "tombstone")
    assert {tuple(r[n] for n in rules) for r in plain.records} == {(None, None, None)}
    assert all(
        (r.order_value, r.bad_version, r.tombstone) == (None, False, r.value is None)
        for r in run.records
    )

    def record(r: Row) -> dict[str, Any]:
        return {n: v for n, v in r.asDict().items() if n not in rules}

    kept_rows = {(r.topic, r.offset): record(r) for r in run.records}
    assert all(kept_rows.get((r.topic, r.offset), record(r)) == record(r) for r in plain.records)


def test_one_summary_row_per_segment_after_its_records(spark: SparkSession, tmp_path: Path) -> None:
    root, _ = _layout(tmp_path)

    run = _available_now(spark, root, tmp_path / "checkpoint", **_manifest(tmp_path))

    summaries = {(r.topic, r.partition, r.batch_base_offset): r for r in run.rows if r.segment_end}
    assert sorted(summaries) == [("orders", 0, 0), ("orders", 0, 10), ("pay-ments", 3, 0)]
    first = summaries[("orders", 0, 0)]
    assert first.offset == first.batch_last_offset == 9  # the trailing empty batch counts
    assert summaries[("orders", 0, 10)].offset == 13
    assert summaries[("pay-ments", 3, 0)].offset == 2
    for row in summaries.values():
        assert row.segment_bytes == os.path.getsize(row.segment)
        assert row.error is None
        assert row.key is None and row.value is None and row.headers == []
        assert row.timestamp == datetime(1970, 1, 1)
    # Within a segment's task the summary comes last.
    by_segment: dict[tuple[str, int, int], list[Row]] = {}
    for row in run.rows:
        by_segment.setdefault((row.topic, row.partition, row.segment_base), []).append(row)
    for rows in by_segment.values():
        assert [r.segment_end for r in rows] == [False] * (len(rows) - 1) + [True]


def test_rolled_only_false_reads_the_active_segments_too(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, written = _layout(tmp_path)

    run = _available_now(
        spark, root, tmp_path / "checkpoint", rolledOnly="false", **_manifest(tmp_path)
    )

    assert len(run.summaries) == 5
    assert run.kafka_rows("pay-ments", 3) == _by_offset(
        _kafka_row("pay-ments", 3, r) for r in written["pay-ments-3/0"] + written["pay-ments-3/5"]
    )


def test_a_restart_reads_only_what_is_new(spark: SparkSession, tmp_path: Path) -> None:
    root, written = _layout(tmp_path)
    checkpoint, options = tmp_path / "checkpoint", _manifest(tmp_path)
    first = _available_now(spark, root, checkpoint, **options)
    assert len(first.summaries) == 3

    nothing = _available_now(spark, root, checkpoint, **options)
    assert nothing.batches == []

    new = _records(30, 2)
    _segment(root, "orders", 0, 30, build_batch(new))  # rolls orders-0: 20 becomes eligible
    second = _available_now(spark, root, checkpoint, **options)

    assert list(second.summaries) == [f"orders-0/{20:020d}.log"]
    assert second.kafka_rows("orders", 0) == _by_offset(
        _kafka_row("orders", 0, r) for r in written["orders-0/20"]
    )
    assert [b for b, _ in second.batches] == [1]  # batch ids continue from the checkpoint


def test_max_segments_per_trigger_splits_an_available_now_run(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, _ = _layout(tmp_path)

    run = _available_now(
        spark,
        root,
        tmp_path / "checkpoint",
        rolledOnly="false",
        maxSegmentsPerTrigger="2",
        **_manifest(tmp_path),
    )

    assert [b for b, _ in run.batches] == [0, 1, 2]
    summaries_per_batch = [rows for _, rows in run.batches]
    assert sum(summaries_per_batch) == len(run.rows)
    assert len(run.summaries) == 5


def _corrupt_crc(batch: bytes) -> bytes:
    data = bytearray(batch)
    struct.pack_into(">I", data, CRC_OFFSET, 0x12345678)
    return bytes(data)


def test_a_corrupt_segment_keeps_its_good_records_and_reports_the_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    root = tmp_path / "logs"
    good, bad = _records(0, 5), _records(5, 3)
    first = build_batch(good)
    path = _segment(root, "orders", 0, 0, first, _corrupt_crc(build_batch(bad)))
    _segment(root, "orders", 1, 0, build_batch(_records(0, 4, "x")), build_batch(_records(4, 4)))

    run = _available_now(
        spark, root, tmp_path / "checkpoint", rolledOnly="false", **_manifest(tmp_path)
    )

    assert run.kafka_rows("orders", 0) == [_kafka_row("orders", 0, r) for r in good]
    assert len(run.kafka_rows("orders", 1)) == 8
    summary = next(r for r in run.rows if r.segment_end and r.partition == 0)
    assert summary.offset == 4
    assert summary.segment_bytes == len(first)
    assert summary.error == (
        f"{path}: corrupt batch at position {len(first)}, base offset 5: "
        "CRC mismatch: stored 0x12345678"
    )
    other = next(r for r in run.rows if r.segment_end and r.partition == 1)
    assert (other.offset, other.error) == (7, None)


def test_a_deleted_segment_is_reported_not_fatal(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    gone = _segment(root, "t", 0, 0, build_batch(_records(0, 2)))
    _segment(root, "t", 0, 2, build_batch(_records(2, 2)))
    _segment(root, "t", 0, 4, build_batch(_records(4, 2)))
    options = _manifest(tmp_path)
    # Numbered by an earlier discovery, then removed (retention) before any query read it.
    Manifest(options["manifest"]).discover([str(root)])
    gone.unlink()

    run = _available_now(spark, root, tmp_path / "checkpoint", **options)

    assert [r.offset for r in run.records] == [2, 3]
    summary = run.summaries[_short(str(gone))]
    assert summary.error == f"{gone}: segment file not found (deleted after discovery)"
    assert (summary.offset, summary.segment_bytes) == (-1, 0)


def test_an_unreadable_segment_is_reported_not_fatal(spark: SparkSession, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _segment(root, "t", 0, 0, build_batch(_records(0, 2)))
    unreadable = _segment(root, "t", 0, 2, build_batch(_records(2, 2)))
    _segment(root, "t", 0, 4, build_batch(_records(4, 2)))
    options = _manifest(tmp_path)
    Manifest(options["manifest"]).discover([str(root)])
    # Replaced after discovery by what no retry can read (as root, a mode bit would not stop it).
    unreadable.unlink()
    unreadable.mkdir()

    run = _available_now(spark, root, tmp_path / "checkpoint", **options)

    assert [r.offset for r in run.records] == [0, 1]
    summary = run.summaries[_short(str(unreadable))]
    assert summary.error == f"{unreadable}: segment file cannot be read (Is a directory)"
    assert (summary.offset, summary.segment_bytes) == (-1, 0)


def test_a_lost_manifest_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    root, _ = _layout(tmp_path)
    checkpoint, options = tmp_path / "checkpoint", _manifest(tmp_path)
    _available_now(spark, root, checkpoint, **options)

    shutil.rmtree(options["manifest"])
    with pytest.raises(StreamingQueryException, match="deleted, replaced or moved"):
        _available_now(spark, root, checkpoint, **options)


def test_a_plain_batch_read_is_records_only(spark: SparkSession, tmp_path: Path) -> None:
    root, written = _layout(tmp_path)

    df = spark.read.format("kafka-segments").option("paths", str(root)).load()

    assert not df.isStreaming
    rolled = ("orders-0/0", "orders-0/10", "pay-ments-3/0")
    assert df.count() == sum(len(written[s]) for s in rolled) == 5 + 4 + 3
    assert df.where("segment_end").count() == 0
    assert not (tmp_path / "manifest").exists()


def test_the_summaries_option_adds_a_row_per_segment(spark: SparkSession, tmp_path: Path) -> None:
    root, _ = _layout(tmp_path)

    df = spark.read.format("kafka-segments").option("summaries", "true").load(str(root))

    rows = df.collect()
    assert sorted(_short(r.segment) for r in rows if r.segment_end) == [
        f"{p}/{base:020d}.log"
        for p, base in (("orders-0", 0), ("orders-0", 10), ("pay-ments-3", 0))
    ]
    assert sum(1 for r in rows if not r.segment_end) == 5 + 4 + 3


def test_a_plain_stream_is_records_only(spark: SparkSession, tmp_path: Path) -> None:
    root, _ = _layout(tmp_path)

    run = _available_now(spark, root, tmp_path / "cp", summaries="false", **_manifest(tmp_path))

    assert len(run.rows) == 5 + 4 + 3 and run.summaries == {}


def test_any_session_finds_the_source_without_register(spark: SparkSession, tmp_path: Path) -> None:
    """Spark registers ``pyspark_segcompact.DefaultSource`` by itself (SPARK-45917): a new
    session, which shares none of this module's ``register(spark)``, reads the format."""
    root, _ = _layout(tmp_path)
    fresh = spark.newSession()

    assert fresh.read.format("kafka-segments").load(str(root)).count() == 5 + 4 + 3


def test_batch_read_of_nothing(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert spark.read.format("kafka-segments").load(str(tmp_path / "empty")).count() == 0


# --- options (no query) ---------------------------------------------------------------------


def test_options_parse_paths_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    opts = SourceOptions.from_options({"paths": "b, a ,", "path": "c"})
    roots = tuple(str(tmp_path / p) for p in ("b", "a", "c"))
    assert opts.roots == roots
    assert opts.rolled_only is True
    assert opts.max_segments_per_trigger is None
    assert opts.manifest is None  # no default: nothing lands in the working directory
    assert opts.summaries is False  # records only unless asked
    named = SourceOptions.from_options({"path": "c", "manifest": "m"})
    assert named.manifest == str(tmp_path / "m")

    # load([...]) passes a JSON array; option names are case-insensitive.
    opts = SourceOptions.from_options(
        {"paths": '["/x", "/y"]', "ROLLEDONLY": "False", "maxsegmentspertrigger": "7"}
    )
    assert (opts.roots, opts.rolled_only, opts.max_segments_per_trigger) == (("/x", "/y"), False, 7)
    assert SourceOptions.from_options({"path": "/x", "Summaries": "TRUE"}).summaries is True


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "no source root"),
        ({"path": "/x", "rolledOnly": "yes"}, r"option rolledOnly: 'yes' is not allowed"),
        (
            {"path": "/x", "summaries": "1"},
            r"option summaries: '1' is not allowed \(true or false\)",
        ),
        ({"path": "/x", "maxSegmentsPerTrigger": "0"}, "a positive integer"),
        ({"path": "/x", "maxSegmentsPerTrigger": "many"}, "a positive integer"),
        ({"paths": "[oops"}, "not a JSON array"),
        ({"path": "/x", "compaction": "{}"}, "option compaction: not a compaction ranking"),
    ],
)
def test_bad_options_are_rejected(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SourceOptions.from_options(options)


def test_a_bad_option_fails_the_query_with_its_message(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.readStream.format("kafka-segments").option("rolledOnly", "maybe").load(str(tmp_path))
    with pytest.raises(StreamingQueryException, match=r"option rolledOnly: 'maybe' is not allowed"):
        _start_and_wait(df, tmp_path)


def test_a_streaming_read_without_a_manifest_fails_saying_so(
    spark: SparkSession, tmp_path: Path
) -> None:
    root, _ = _layout(tmp_path / "in")
    df = spark.readStream.format("kafka-segments").load(str(root))
    # The reader refuses before it opens a manifest anywhere (the driver's directory before).
    with pytest.raises(StreamingQueryException, match=r"option manifest: a streaming read needs"):
        _start_and_wait(df, tmp_path)


def _start_and_wait(df: Any, tmp_path: Path) -> None:
    query = (
        df.writeStream.format("memory")
        .queryName("bad_option")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(300)
    finally:
        query.stop()


# --- reading one segment (no query) ---------------------------------------------------------


@pytest.mark.parametrize("chunk_records", [1, 3, 7, 1000])
def test_every_good_record_before_a_corrupt_batch_is_read_whatever_the_chunking(
    tmp_path: Path, chunk_records: int
) -> None:
    batches = [build_batch(_records(i * 5, 5)) for i in range(6)]
    path = _segment(tmp_path, "t", 0, 0, *batches, _corrupt_crc(build_batch(_records(30, 2))))
    part = ManifestEntry(1, SegmentFile("t", 0, 0, str(path), os.path.getsize(path)))

    out = list(
        read_segments([part], chunk_records=chunk_records, chunk_bytes=1 << 20, storage=Storage())
    )

    offsets = [o for b in out[:-1] for o in b.column("offset").to_pylist()]
    assert offsets == list(range(30))
    (summary,) = out[-1].to_pylist()
    assert summary["segment_end"] and summary["offset"] == 29
    assert summary["segment_bytes"] == sum(len(b) for b in batches)
    assert "base offset 30: CRC mismatch" in summary["error"]


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 1])
def test_a_segment_reduced_in_two_passes_stops_at_its_corrupt_batch_too(
    tmp_path: Path, chunk_bytes: int
) -> None:
    """A budget of a few bytes (chunk_bytes 1) reads the segment twice; both passes stop at
    the corrupt batch, and what leaves is still a reduction of the records before it."""
    batches = [build_batch(_records(i * 5, 5)) for i in range(6)]
    path = _segment(tmp_path, "t", 0, 0, *batches, _corrupt_crc(build_batch(_records(30, 2))))
    part = ManifestEntry(1, SegmentFile("t", 0, 0, str(path), os.path.getsize(path)))

    out = list(
        read_segments(
            [part], chunk_records=4, chunk_bytes=chunk_bytes, storage=Storage(), rankings=Rankings()
        )
    )

    kept = [o for b in out[:-1] for o in b.column("offset").to_pylist()]
    (summary,) = out[-1].to_pylist()
    assert "base offset 30: CRC mismatch" in summary["error"] and summary["offset"] == 29
    assert len(set(kept)) == len(kept) and set(kept) <= set(range(30))
    assert {27, 28, 29} <= set(kept)  # each key's latest
    assert summary["folded_records"] == 30 - len(kept)
    if chunk_bytes == 1 << 20:
        assert sorted(kept) == [27, 28, 29]


def test_small_segments_share_a_task_and_a_big_one_goes_alone() -> None:
    def seg(seq: int, size: int) -> ManifestEntry:
        return ManifestEntry(seq, SegmentFile("t", 0, seq, f"/x/{seq}.log", size))

    tasks = pack([seg(1, 40), seg(2, 40), seg(3, 40), seg(4, 500), seg(5, 10)], max_bytes=100)
    assert [[s.seq for s in t.segments] for t in tasks] == [[1, 2], [3], [4], [5]]


def test_a_partitions_segments_stay_in_one_task_up_to_max_together() -> None:
    """A full segment and its partition's small next one are reduced together, though over
    max_bytes; a partition's run over max_together splits; other partitions share up to
    max_bytes."""

    def seg(seq: int, partition: int, base: int, size: int) -> ManifestEntry:
        return ManifestEntry(seq, SegmentFile("t", partition, base, f"/x/{seq}.log", size))

    segments = [seg(1, 0, 0, 100), seg(2, 0, 10, 5), seg(3, 1, 0, 100), seg(4, 1, 10, 5)]
    segments += [seg(5, 2, 0, 30), seg(6, 3, 0, 30), seg(7, 4, 0, 300), seg(8, 4, 10, 300)]
    segments += [seg(9, 4, 20, 300)]

    tasks = pack(segments, max_bytes=100, max_together=650)

    assert [[s.seq for s in t.segments] for t in tasks] == [[1, 2], [3, 4], [5, 6], [7, 8], [9]]
    plain = pack(segments, max_bytes=100)
    assert [[s.seq for s in t.segments] for t in plain] == [
        [1],
        [2],
        [3],
        [4, 5, 6],
        [7],
        [8],
        [9],
    ]


def test_a_partitions_consecutive_segments_in_rising_order_are_read_together() -> None:
    def seg(seq: int, topic: str, partition: int, base: int) -> ManifestEntry:
        return ManifestEntry(seq, SegmentFile(topic, partition, base, f"/x/{seq}.log", 1))

    task = [seg(1, "t", 0, 0), seg(2, "t", 0, 10), seg(3, "t", 1, 0), seg(4, "t", 0, 20)]
    task += [seg(5, "t", 0, 30), seg(6, "t", 0, 5), seg(7, "u", 0, 40)]
    together = runs(task, reduced=True)
    assert [[e.seq for e in run] for run in together] == [[1, 2], [3], [4, 5], [6], [7]]
    assert [[e.seq for e in run] for run in runs(task, reduced=False)] == [[i] for i in range(1, 8)]


def _reduced_together(
    parts: list[ManifestEntry],
    monkeypatch: pytest.MonkeyPatch,
    on_second_pass: Callable[[Selection], object],
) -> list[dict[str, Any]]:
    """The rows of ``read_segments`` over ``parts`` (a budget of 256 KiB; past 32 KiB of
    files, keys first), calling ``on_second_pass`` with each segment's selection once the
    second pass has read it, before the reducer takes it."""
    second_pass = SegmentReducer.done

    def done(self: SegmentReducer, selection: Selection) -> None:
        on_second_pass(selection)
        second_pass(self, selection)

    monkeypatch.setattr(SegmentReducer, "done", done)
    out = read_segments(
        parts, chunk_records=2, chunk_bytes=32 << 10, storage=Storage(), rankings=Rankings()
    )
    return [r for b in out for r in b.to_pylist()]


@pytest.mark.parametrize("two_passes", [False, True])
@pytest.mark.parametrize("vanished", [False, True])
def test_segments_reduced_together_leave_one_candidate_per_key_of_them_all(
    tmp_path: Path, two_passes: bool, vanished: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys 0..2 in two segments, in one pass or (values of 40 kB: the rows on the fronts pass
    a quarter of a 256 KiB budget) two: each key's latest record of both leaves, and the
    summary rows after them all say so. A segment gone before it is read is reported on its
    own summary row; the other is still reduced."""

    def records(first: int, count: int) -> list[Record]:
        value = b"v" * (40_000 if two_passes else 10)
        return [
            Record(first + i, 1_700_000_000_000 + first + i, b"key-%d" % (i % 3), value, ())
            for i in range(count)
        ]

    first = _segment(tmp_path, "t", 0, 0, build_batch(records(0, 5)))
    second = _segment(tmp_path, "t", 0, 5, build_batch(records(5, 4)))
    parts = [
        ManifestEntry(i, SegmentFile("t", 0, base, str(path), os.path.getsize(path)))
        for i, (base, path) in enumerate([(0, first), (5, second)], start=1)
    ]
    if vanished:
        first.unlink()
    again: list[int] = []

    rows = _reduced_together(parts, monkeypatch, lambda select: again.append(select.decoded))

    records_out = [r for r in rows if not r["segment_end"]]
    summaries = [r for r in rows if r["segment_end"]]
    assert [r["segment_end"] for r in rows[-2:]] == [True, True]  # after all the records
    assert sum(again) == (0 if not two_passes else 4 if vanished else 9)
    # Segment 5..8 holds keys 0, 1, 2, 0: offsets 6, 7 and 8 are the latest of both.
    assert sorted(r["offset"] for r in records_out) == [6, 7, 8]
    assert {r["segment_base"] for r in records_out} == {5}
    assert [s["reduced_segments"] for s in summaries] == [2, 2]
    assert [s["one_per_key"] for s in summaries] == [True, True]
    assert [s["folded_records"] for s in summaries] == [0, 1 if vanished else 6]
    earliest = 1_700_000_000_000 + (5 if vanished else 0)
    assert summaries[1]["timestamp"] == datetime.fromtimestamp(earliest / 1000, UTC)
    if vanished:
        assert "segment file not found" in summaries[0]["error"]
        assert summaries[0]["segment_bytes"] == 0 and summaries[0]["offset"] == -1
    else:
        assert summaries[0]["error"] is None and summaries[0]["offset"] == 4
    assert summaries[1]["error"] is None and summaries[1]["offset"] == 8


def test_a_segment_gone_between_the_two_passes_is_reported_and_not_one_per_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second segment is deleted once the second pass has begun: its winners cannot be
    read again, so nothing of it leaves, its summary row says why, and the run is not one per
    key (the merge then reduces across rows, whatever the first pass counted)."""
    value = b"v" * 40_000
    first = _segment(
        tmp_path,
        "t",
        0,
        0,
        build_batch([Record(i, 1_700_000_000_000, b"key-%d" % i, value, ()) for i in range(5)]),
    )
    second = _segment(
        tmp_path,
        "t",
        0,
        5,
        build_batch([Record(5, 1_700_000_000_000, b"key-0", value, ())]),
    )
    parts = [
        ManifestEntry(i, SegmentFile("t", 0, base, str(path), os.path.getsize(path)))
        for i, (base, path) in enumerate([(0, first), (5, second)], start=1)
    ]

    rows = _reduced_together(parts, monkeypatch, lambda _: second.unlink(missing_ok=True))

    summaries = [r for r in rows if r["segment_end"]]
    # Keys 1..4 win in the first segment; key 0's winner (offset 5) was in the second.
    assert sorted(r["offset"] for r in rows if not r["segment_end"]) == [1, 2, 3, 4]
    assert [s["one_per_key"] for s in summaries] == [False, False]
    assert summaries[0]["error"] is None
    assert "segment file not found" in summaries[1]["error"] and summaries[1]["offset"] == -1
