"""The compactor on logs other software wrote: the golden segments of a real Kafka broker
(tests/golden/README.md) and a log written with kafka-python's record builder, each held to
the reference model row for row (merge times included: the clock is a ManualClock)."""

from __future__ import annotations

import base64
import json
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.format.attributes import Compression
from segcompact.spark.job import Compactor
from segcompact.storage import LocalInputFile
from tests.e2e.harness import (
    RETENTION_MS,
    model_pending,
    model_state,
    partitions_table,
    pending_records,
    state_table,
    write_config,
)
from tests.support.model import ReferenceModel, read_log_records

pytestmark = pytest.mark.spark

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SEGMENTS = GOLDEN / "segments"
EXPECTED: dict[str, Any] = json.loads((GOLDEN / "expected.json").read_text())["topics"]
NOW_MS = 1_800_000_000_000
KP_TOPIC = "kafka-python"


def _b(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def _logs(root: Path, topic: str) -> list[Path]:
    return sorted((root / f"{topic}-0").glob("*.log"))


# --- a log kafka-python wrote ---------------------------------------------------------------

# (codec, [(key, value, headers)]) per batch; offsets follow on from batch to batch.
_KP_BATCHES: list[tuple[Compression, list[tuple[bytes | None, bytes | None, list[Any]]]]] = [
    (
        Compression.NONE,
        [(b"k%d" % (i % 5), b"none-%d" % i, [("h", b"%d" % i)]) for i in range(8)],
    ),
    (
        Compression.GZIP,
        [(b"k1", None, []), (None, b"keyless", []), (b"k5", b"", [("n", None)])],
    ),
    (Compression.SNAPPY, [(b"k%d" % (i % 5), b"snappy-%d" % i, []) for i in range(9)]),
    (Compression.LZ4, [(b"k2", None, [("why", b"gone")]), (b"k6", b"lz4" * 40, [])]),
    (
        Compression.ZSTD,
        [(b"k0", b"zstd-last", [("a", b"1"), ("a", b"2")]), (b"\x00\xff", b"binary", [])],
    ),
]


def write_kafka_python_log(directory: Path) -> Path:
    """One segment of v2 batches built by kafka-python, base offsets set as a broker does."""
    data = bytearray()
    offset = 0
    for i, (codec, records) in enumerate(_KP_BATCHES):
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=int(codec),
            is_transactional=False,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 30,
        )
        for delta, (key, value, headers) in enumerate(records):
            # Out-of-order timestamps across batches, as producers on several hosts write.
            timestamp = 1_700_000_000_000 + 1000 * delta - 500 * i
            builder.append(delta, timestamp, key, value, headers)
        batch = bytearray(builder.build())
        struct.pack_into(">q", batch, 0, offset)  # base offset: not covered by the CRC
        data += batch
        offset += len(records)
    directory.mkdir(parents=True)
    path = directory / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    return path


# --- one run over the golden segments and the kafka-python log ------------------------------


@dataclass(frozen=True)
class Compacted:
    config: CompactorConfig
    model: ReferenceModel
    kp_log: Path


@pytest.fixture(scope="module")
def compacted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Compacted:
    work = tmp_path_factory.mktemp("golden")
    kp_log = write_kafka_python_log(work / "kp" / f"{KP_TOPIC}-0")
    # The golden folder is read in place: the source only lists and reads it.
    config = load_config(write_config(work, [SEGMENTS, work / "kp"], rolled_only=False, topics={}))
    clock = ManualClock(NOW_MS)
    Compactor(spark, config, clock).run_once()

    records = [r for topic in EXPECTED for p in _logs(SEGMENTS, topic) for r in _read(p, topic)]
    records += read_log_records(LocalInputFile(kp_log), KP_TOPIC, 0)
    model = ReferenceModel(config.topic)
    model.apply(records, NOW_MS)
    model.expire(NOW_MS)
    return Compacted(config, model, kp_log)


def _read(path: Path, topic: str) -> list[Any]:
    return list(read_log_records(LocalInputFile(path), topic, 0))


def test_state_matches_the_reference_model(spark: SparkSession, compacted: Compacted) -> None:
    rows = state_table(spark, compacted.config)
    assert rows == model_state(compacted.model)
    assert {t for t, _, _ in rows} == {*EXPECTED, KP_TOPIC}
    assert pending_records(spark, compacted.config) == model_pending(compacted.model) == set()


def test_codec_topics_keep_the_last_write_of_every_key(
    spark: SparkSession, compacted: Compacted
) -> None:
    rows = state_table(spark, compacted.config)
    for topic in ("golden-none", "golden-gzip", "golden-snappy", "golden-lz4", "golden-zstd"):
        last = {_b(e["key"]): e for e in EXPECTED[topic]["records"]}
        assert {k[2]: r["offset"] for k, r in rows.items() if k[0] == topic} == {
            key: e["offset"] for key, e in last.items()
        }, topic
        assert {k[2]: r["value"] for k, r in rows.items() if k[0] == topic} == {
            key: _b(e["value"]) for key, e in last.items()
        }, topic


def test_aborted_transaction_never_enters_state(spark: SparkSession, compacted: Compacted) -> None:
    spec = EXPECTED["golden-txn"]
    rows = {
        k[2]: r for k, r in state_table(spark, compacted.config).items() if k[0] == "golden-txn"
    }
    aborted = [e for e in spec["records"] if e["txn_outcome"] == "aborted"]
    committed = [e for e in spec["records"] if e["txn_outcome"] == "committed"]
    assert aborted and committed
    values = {r["value"] for r in rows.values()}
    offsets = {r["offset"] for r in rows.values()}
    for e in aborted:
        assert _b(e["value"]) not in values
        assert e["offset"] not in offsets
    # Every transaction wrote the same keys: the last committed one is what state holds.
    latest = {_b(e["key"]): e for e in committed}
    assert {k: (r["offset"], r["value"]) for k, r in rows.items()} == {
        k: (e["offset"], _b(e["value"])) for k, e in latest.items()
    }
    assert {e["txn"] for e in latest.values()} == {2}


def test_headers_topic_drops_and_counts_the_keyless_record(
    spark: SparkSession, compacted: Compacted
) -> None:
    spec = EXPECTED["golden-headers"]
    rows = {
        k[2]: r for k, r in state_table(spark, compacted.config).items() if k[0] == "golden-headers"
    }
    keyless = [e for e in spec["records"] if e["key"] is None]
    assert len(keyless) == 1
    assert _b(keyless[0]["value"]) not in {r["value"] for r in rows.values()}
    assert keyless[0]["offset"] not in {r["offset"] for r in rows.values()}
    assert b"" in rows, "an empty key is a key"
    # Headers as written: order, repeats, null and empty values, non-ASCII names.
    for e in spec["records"]:
        key = _b(e["key"])
        if key is not None and rows[key]["offset"] == e["offset"]:
            assert list(rows[key]["headers"]) == [(k, _b(v)) for k, v in e["headers"]]
    tombstones = {k for k, r in rows.items() if r["tombstone"]}
    assert tombstones == {b"h-multi", b"h-none"}
    assert {rows[k]["delete_horizon"] for k in tombstones} == {NOW_MS + RETENTION_MS}
    parts = partitions_table(spark, compacted.config)
    assert parts[("golden-headers", 0)].keyless_records == 1
    assert compacted.model.keyless[("golden-headers", 0)] == 1
    assert parts[("golden-headers", 0)].records == len(spec["records"])


def test_log_append_time_is_the_record_timestamp(spark: SparkSession, compacted: Compacted) -> None:
    spec = EXPECTED["golden-logappend"]
    rows = {
        k[2]: r
        for k, r in state_table(spark, compacted.config).items()
        if k[0] == "golden-logappend"
    }
    last = {_b(e["key"]): e for e in spec["records"]}
    assert {k: (r["timestamp"], r["timestampType"]) for k, r in rows.items()} == {
        k: (e["log_append_time"], 1) for k, e in last.items()
    }


def test_partitions_table_offsets_and_counts(spark: SparkSession, compacted: Compacted) -> None:
    parts = partitions_table(spark, compacted.config)
    for topic, spec in EXPECTED.items():
        p = parts[(topic, 0)]
        assert (p.log_start_offset, p.log_end_offset) == (0, spec["log_end_offset"]), topic
        assert p.records == len(spec["records"]), topic
        assert p.segments == len(_logs(SEGMENTS, topic)), topic
        assert p.uncleanable_reason is None, topic
        assert p.keyless_records == sum(e["key"] is None for e in spec["records"]), topic
    kp = parts[(KP_TOPIC, 0)]
    assert kp.log_end_offset == sum(len(records) for _, records in _KP_BATCHES)
    assert kp.records == kp.log_end_offset
    assert kp.keyless_records == 1


def test_kafka_python_log_matches_the_model(spark: SparkSession, compacted: Compacted) -> None:
    rows = {k[2]: r for k, r in state_table(spark, compacted.config).items() if k[0] == KP_TOPIC}
    expected = {k[2]: r for k, r in model_state(compacted.model).items() if k[0] == KP_TOPIC}
    assert rows == expected
    assert rows[b"k0"]["value"] == b"zstd-last"
    assert rows[b"k0"]["headers"] == (("a", b"1"), ("a", b"2"))
    assert rows[b"k2"]["tombstone"] and rows[b"k2"]["headers"] == (("why", b"gone"),)
    assert rows[b"k5"]["value"] == b"" and not rows[b"k5"]["tombstone"]
    assert rows[b"\x00\xff"]["value"] == b"binary"


# --- a transaction whose marker comes in a later segment ------------------------------------


def test_golden_transaction_waits_for_its_marker_in_the_next_segment(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec = EXPECTED["golden-txn"]
    first, second = _logs(SEGMENTS, "golden-txn")
    partition = tmp_path / "in" / "golden-txn-0"
    partition.mkdir(parents=True)
    config = load_config(write_config(tmp_path, [tmp_path / "in"], rolled_only=False, topics={}))
    clock = ManualClock(NOW_MS)
    compactor = Compactor(spark, config, clock)
    model = ReferenceModel(config.topic)

    shutil.copy(first, partition)
    compactor.run_once()
    model.apply(_read(first, "golden-txn"), clock.now_ms())
    # Transaction 0 is undecided: its COMMIT marker (offset 5) is in the next segment.
    assert state_table(spark, config) == model_state(model) == {}
    txn0 = {e["offset"] for e in spec["records"] if e["txn"] == 0}
    assert {offset for *_, offset in pending_records(spark, config)} == txn0
    assert pending_records(spark, config) == model_pending(model)

    clock.advance(1_000)
    shutil.copy(second, partition)
    compactor.run_once()
    model.apply(_read(second, "golden-txn"), clock.now_ms())
    rows = state_table(spark, config)
    assert rows == model_state(model)
    assert {r["offset"] for r in rows.values()} == {
        e["offset"] for e in spec["records"] if e["txn"] == 2
    }
    assert pending_records(spark, config) == model_pending(model) == set()
    assert (
        partitions_table(spark, config)[("golden-txn", 0)].log_end_offset
        == (spec["log_end_offset"])
    )
