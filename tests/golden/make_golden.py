"""Write the golden segments under tests/golden/segments/ with a real Apache Kafka broker.

Run from the repository root: `make golden` (or `python -m tests.golden.make_golden`).
It starts a single-node KRaft broker in a temporary directory, produces fixed records with
confluent-kafka (librdkafka) into one single-partition topic per case, stops the broker
cleanly, copies each partition's segment files here and writes `expected.json`: what was
produced, where the broker put it, and the batch layout read back by kafka-python (the
independent codec oracle). README.md in this folder describes the files.

The data is fixed; the bytes are not quite: producer ids, log-append times and, rarely, batch
boundaries depend on the run. Regenerate expected.json and the segments together, never one.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segcompact.format.batch import LENGTH_OFFSET
from segcompact.format.record import Header
from tests.support.jvm import (
    KafkaError,
    kafka_jars_available,
    kafka_version,
    missing_kafka_message,
    resolve_main_class,
    run_java_tool,
)
from tests.support.kafka_broker import KafkaBroker
from tests.support.producing import PartitionProducer, producer_settings

GOLDEN_DIR = Path(__file__).resolve().parent
PARTITION = 0
# 2023-11-14T22:13:20Z: a fixed CreateTime, far enough in the past to be obviously fake.
BASE_TIMESTAMP_MS = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_RECORDS = 200
CODEC_KEYS = 50
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# Copied beside each .log: offset and time indexes, and the aborted-transaction index.
COPIED_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")

# Shared by every producer (expected.json records them with each topic's own settings).
PRODUCER_BASE = producer_settings(batch_messages=64)


@dataclass(slots=True)
class Produced:
    """One record as produced, plus what the delivery report said about it."""

    key: bytes | None
    value: bytes | None
    headers: list[Header]
    timestamp: int
    txn: int | None = None
    txn_outcome: str | None = None
    offset: int | None = None
    log_append_time: int | None = None


@dataclass(slots=True)
class TopicCase:
    name: str
    description: str
    codec: str = "none"
    timestamp_type: str = "CreateTime"
    topic_config: dict[str, str] = field(default_factory=dict)
    producer_config: dict[str, Any] = field(default_factory=dict)
    transactional: bool = False
    records: list[Produced] = field(default_factory=list)
    # Filled in after producing.
    transactions: list[dict[str, Any]] = field(default_factory=list)


# -- the data -----------------------------------------------------------------------------------


def codec_records() -> list[Produced]:
    """200 records over 50 keys (4 versions of each), compressible JSON-ish values.

    librdkafka sends a batch uncompressed when compression does not shrink it, so the values
    repeat text on purpose.
    """
    records = []
    for i in range(CODEC_RECORDS):
        key = f"key-{i % CODEC_KEYS:03d}"
        value = (
            f'{{"id":{i},"key":"{key}","version":{i // CODEC_KEYS},'
            f'"payload":"lorem ipsum dolor sit amet"}}'
        )
        records.append(
            Produced(
                key=key.encode(),
                value=value.encode(),
                headers=[("seq", str(i).encode())],
                timestamp=BASE_TIMESTAMP_MS + i * 1000,
            )
        )
    return records


def header_records() -> list[Produced]:
    """Edge cases of keys, values and headers, in one batch."""
    t = BASE_TIMESTAMP_MS
    rows: list[tuple[bytes | None, bytes | None, list[Header]]] = [
        (b"h-multi", b"several headers", [("a", b"1"), ("b", b"2"), ("c", b"3")]),
        (b"h-repeat", b"repeated header key", [("dup", b"first"), ("x", b"-"), ("dup", b"second")]),
        (b"h-null", b"header with a null value", [("nullh", None)]),
        (b"h-empty", b"header with an empty value", [("emptyh", b"")]),
        (b"h-none", b"no headers", []),
        (b"h-utf8", b"non-ASCII header key", [("cl\u00e9-\u2603", b"\xff\x00\x01")]),
        (b"h-multi", None, [("reason", b"tombstone")]),
        (b"h-none", None, []),
        (b"v-empty", b"", [("kind", b"empty value")]),
        (None, b"record without a key", [("kind", b"null key")]),
        (b"", b"empty key", [("kind", b"empty key")]),
        (b"\x00\xff\x80binary", bytes(range(256)), [("kind", b"binary key and value")]),
    ]
    # Timestamps go backwards once (index 6) so timestamp ordering differs from offset order.
    deltas = [0, 1, 2, 3, 4, 5, -10, 7, 8, 9, 10, 11]
    return [
        Produced(key=k, value=v, headers=h, timestamp=t + d * 1000)
        for (k, v, h), d in zip(rows, deltas, strict=True)
    ]


TXNS: tuple[str, ...] = ("committed", "aborted", "committed")


def txn_records() -> list[Produced]:
    """Three transactions over the same five keys: commit, abort, commit."""
    records = []
    for txn, outcome in enumerate(TXNS):
        for j in range(5):
            records.append(
                Produced(
                    key=f"tk-{j}".encode(),
                    value=f"txn {txn} ({outcome}) record {j}".encode(),
                    headers=[("txn", str(txn).encode())],
                    timestamp=BASE_TIMESTAMP_MS + (txn * 10 + j) * 1000,
                    txn=txn,
                    txn_outcome=outcome,
                )
            )
    return records


def logappend_records() -> list[Produced]:
    """20 records in batches of 8; the broker overwrites the batch timestamps."""
    return [
        Produced(
            key=f"la-{i % 5}".encode(),
            value=f"log append time record {i}".encode(),
            headers=[],
            timestamp=BASE_TIMESTAMP_MS + i * 1000,
        )
        for i in range(20)
    ]


def cases() -> list[TopicCase]:
    out = [
        TopicCase(
            name=f"golden-{codec}",
            description=(
                f"{CODEC_RECORDS} records over {CODEC_KEYS} keys, producer compression "
                f"{codec}, batches of up to 64 records"
            ),
            codec=codec,
            producer_config={"compression.type": codec},
            records=codec_records(),
        )
        for codec in CODECS
    ]
    out.append(
        TopicCase(
            name="golden-headers",
            description=(
                "header edge cases (several, repeated keys, null and empty values, non-ASCII "
                "key), tombstones, an empty value, a null key, an empty key"
            ),
            records=header_records(),
        )
    )
    out.append(
        TopicCase(
            name="golden-txn",
            description=(
                "transactional producer: txn 0 committed, txn 1 aborted, txn 2 committed; "
                "each followed by its control batch"
            ),
            transactional=True,
            producer_config={"transactional.id": "segcompact-golden-txn"},
            records=txn_records(),
        )
    )
    out.append(
        TopicCase(
            name="golden-logappend",
            description="topic with message.timestamp.type=LogAppendTime, batches of up to 8",
            timestamp_type="LogAppendTime",
            topic_config={"message.timestamp.type": "LogAppendTime"},
            producer_config={"batch.num.messages": 8},
            records=logappend_records(),
        )
    )
    return out


# -- producing ----------------------------------------------------------------------------------


def produce(broker: KafkaBroker, case: TopicCase) -> None:
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    broker.create_topic(case.name, partitions=1, config=case.topic_config)
    producer = PartitionProducer(
        broker, case.name, {**PRODUCER_BASE, **case.producer_config}, PARTITION
    )
    log_append = case.timestamp_type == "LogAppendTime"

    def send(rec: Produced) -> None:
        def delivered(msg: Any) -> None:
            rec.offset = msg.offset()
            ts_type, ts = msg.timestamp()
            if log_append:
                if ts_type != TIMESTAMP_LOG_APPEND_TIME:
                    producer.errors.append(
                        f"offset {rec.offset}: expected LogAppendTime, got type {ts_type}"
                    )
                rec.log_append_time = ts

        producer.send(rec.key, rec.value, rec.timestamp, rec.headers, on_delivered=delivered)

    if case.transactional:
        for txn, outcome in enumerate(TXNS):
            with producer.transaction(commit=outcome == "committed", name=f"txn {txn}"):
                for rec in case.records:
                    if rec.txn == txn:
                        send(rec)
    else:
        for rec in case.records:
            send(rec)
        producer.flush()
    offsets = [r.offset for r in case.records]
    if case.transactional:
        _describe_transactions(case)
    elif offsets != list(range(len(case.records))):
        raise KafkaError(f"{case.name}: unexpected offsets {offsets}")


def _describe_transactions(case: TopicCase) -> None:
    """Each transaction's offsets; its marker takes the next offset (one producer only)."""
    case.transactions = []
    for txn, outcome in enumerate(TXNS):
        offsets = [r.offset for r in case.records if r.txn == txn and r.offset is not None]
        first, last = min(offsets), max(offsets)
        case.transactions.append(
            {
                "txn": txn,
                "outcome": outcome,
                "first_offset": first,
                "last_offset": last,
                "marker_offset": last + 1,
                "marker": "COMMIT" if outcome == "committed" else "ABORT",
            }
        )


# -- reading back -------------------------------------------------------------------------------


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def read_batches(log_file: Path) -> list[dict[str, Any]]:
    """The batches of a segment as kafka-python reads them, with their file positions."""
    from kafka.record.default_records import DefaultRecordBatch

    data = log_file.read_bytes()
    batches = []
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + LENGTH_OFFSET)
        end = pos + 12 + length
        batch = DefaultRecordBatch(bytearray(data[pos:end]))
        if batch.magic != 2:
            raise KafkaError(f"{log_file}@{pos}: magic {batch.magic}, expected 2")
        crc_valid = batch.validate_crc()
        records = []
        for r in batch:
            rec: dict[str, Any] = {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": _b64(r.key),
                "value": _b64(r.value),
                "headers": [[k, _b64(v)] for k, v in r.headers],
            }
            if batch.is_control_batch:
                rec["control_type"] = "COMMIT" if r.commit else "ABORT"
            records.append(rec)
        batches.append(
            {
                "file": log_file.name,
                "position": pos,
                "size": end - pos,
                "base_offset": batch.base_offset,
                "last_offset": batch.last_offset,
                "count": batch.records_count,
                "magic": batch.magic,
                "compression": COMPRESSION_NAMES[batch.compression_type],
                "timestamp_type": "LogAppendTime" if batch.timestamp_type else "CreateTime",
                "first_timestamp": batch.first_timestamp,
                "max_timestamp": batch.max_timestamp,
                "is_transactional": batch.is_transactional,
                "is_control": batch.is_control_batch,
                "producer_id": batch.producer_id,
                "producer_epoch": batch.producer_epoch,
                "base_sequence": batch.base_sequence,
                "crc_valid": crc_valid,
                "_records": records,
            }
        )
        pos = end
    return batches


def record_json(rec: Produced) -> dict[str, Any]:
    return {
        "offset": rec.offset,
        "key": _b64(rec.key),
        "value": _b64(rec.value),
        "headers": [[k, _b64(v)] for k, v in rec.headers],
        "timestamp": rec.timestamp,
        "log_append_time": rec.log_append_time,
        "txn": rec.txn,
        "txn_outcome": rec.txn_outcome,
    }


def check_case(case: TopicCase, batches: list[dict[str, Any]]) -> None:
    """Fail loudly if what Kafka wrote is not what this script claims it wrote."""
    problems = []
    data = [r for b in batches if not b["is_control"] for r in b["_records"]]
    controls = [r for b in batches if b["is_control"] for r in b["_records"]]
    for want, got in zip(case.records, data, strict=False):
        exp = record_json(want)
        shown_ts = (
            want.log_append_time if case.timestamp_type == "LogAppendTime" else want.timestamp
        )
        for k in ("offset", "key", "value", "headers"):
            if exp[k] != got[k]:
                problems.append(f"offset {want.offset}: {k} {got[k]!r} != {exp[k]!r}")
        if got["timestamp"] != shown_ts:
            problems.append(f"offset {want.offset}: timestamp {got['timestamp']} != {shown_ts}")
    if len(data) != len(case.records):
        problems.append(f"{len(data)} data records, produced {len(case.records)}")
    want_controls = [(t["marker_offset"], t["marker"]) for t in case.transactions]
    got_controls = [(r["offset"], r["control_type"]) for r in controls]
    if got_controls != want_controls:
        problems.append(f"control records {got_controls} != {want_controls}")
    for b in batches:
        if not b["crc_valid"]:
            problems.append(f"batch at {b['position']}: bad CRC")
        if b["is_transactional"] != case.transactional:
            problems.append(f"batch at {b['position']}: is_transactional {b['is_transactional']}")
        if b["timestamp_type"] != case.timestamp_type:
            problems.append(f"batch at {b['position']}: timestamp type {b['timestamp_type']}")
        if not b["is_control"] and b["compression"] != case.codec:
            problems.append(f"batch at {b['position']}: codec {b['compression']} != {case.codec}")
    if len([b for b in batches if not b["is_control"]]) < 2 and len(case.records) > 64:
        problems.append("expected several batches")
    if problems:
        raise KafkaError(f"{case.name}: golden check failed:\n  " + "\n  ".join(problems))


def check_with_dump_log_segments(files: Sequence[Path], expect: dict[Path, str]) -> None:
    """Kafka's own reader must agree on the codec of every data batch in every file."""
    try:
        resolve_main_class("kafka.tools.DumpLogSegments")
    except KafkaError as e:
        # A second opinion only: kafka-python has already checked every record.
        print(f"warning: DumpLogSegments check skipped: {e}", file=sys.stderr)
        return
    out = run_java_tool(
        "kafka.tools.DumpLogSegments", "--deep-iteration", "--files", ",".join(map(str, files))
    ).stdout
    current: Path | None = None
    seen: dict[Path, set[str]] = {}
    for line in out.splitlines():
        if line.startswith("Dumping "):
            current = Path(line.removeprefix("Dumping ").strip())
            seen[current] = set()
        elif current is not None and line.startswith("baseOffset:") and "isControl: false" in line:
            codec = line.split("compresscodec: ")[1].split()[0].lower()
            seen[current].add(codec)
    for path, codec in expect.items():
        if seen.get(path) != {codec}:
            raise KafkaError(f"DumpLogSegments: {path} codecs {seen.get(path)} != {codec}")


# -- main -----------------------------------------------------------------------------------


def copy_segments(broker: KafkaBroker, case: TopicCase, dest_root: Path) -> list[Path]:
    src = broker.partition_dir(case.name, PARTITION)
    dest = dest_root / f"{case.name}-{PARTITION}"
    dest.mkdir(parents=True)
    copied = []
    for f in sorted(src.iterdir()):
        if f.suffix in COPIED_SUFFIXES:
            shutil.copyfile(f, dest / f.name)
            copied.append(dest / f.name)
    return copied


def topic_json(case: TopicCase, files: list[Path], batches: list[dict[str, Any]]) -> dict[str, Any]:
    producer = {**PRODUCER_BASE, **case.producer_config}
    if case.transactional:
        producer["enable.idempotence"] = True  # implied by transactional.id
    return {
        "partition": PARTITION,
        "description": case.description,
        "codec": case.codec,
        "timestamp_type": case.timestamp_type,
        "transactional": case.transactional,
        "topic_config": case.topic_config,
        "producer_config": producer,
        "log_start_offset": 0,
        "log_end_offset": max(b["last_offset"] for b in batches) + 1,
        "files": [f.name for f in files],
        "records": [record_json(r) for r in case.records],
        "transactions": case.transactions,
        "batches": [{k: v for k, v in b.items() if k != "_records"} for b in batches],
    }


def to_json(obj: Any, indent: str = "") -> str:
    """JSON with one line per record or batch: readable, diffable and a third of indent=1."""
    inner = indent + " "
    if (
        isinstance(obj, dict)
        and obj
        and not all(isinstance(v, str | int | None) for v in obj.values())
    ):
        items = [f"{inner}{json.dumps(k)}: {to_json(v, inner)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        items = [f"{inner}{json.dumps(v, ensure_ascii=False)}" for v in obj]
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json.dumps(obj, ensure_ascii=False)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden.make_golden", description=__doc__)
    parser.add_argument("--output", type=Path, default=GOLDEN_DIR, help="default: %(default)s")
    parser.add_argument(
        "--keep-broker-dir", action="store_true", help="keep the broker's temp dir for inspection"
    )
    args = parser.parse_args(argv)
    if not kafka_jars_available():
        print(f"error: {missing_kafka_message()}", file=sys.stderr)
        return 2

    import confluent_kafka

    out_dir: Path = args.output.resolve()
    segments_dir = out_dir / "segments"
    work = Path(tempfile.mkdtemp(prefix="segcompact-golden-"))
    all_cases = cases()
    try:
        began = time.monotonic()
        with KafkaBroker(work / "broker") as broker:
            print(f"broker up at {broker.bootstrap} in {broker.startup_seconds:.1f}s")
            for case in all_cases:
                produce(broker, case)
                print(f"  produced {len(case.records):4d} records to {case.name}")
        print(f"broker stopped cleanly after {time.monotonic() - began:.1f}s")

        staging = out_dir / "segments.new"
        shutil.rmtree(staging, ignore_errors=True)
        topics: dict[str, Any] = {}
        codec_of_log: dict[Path, str] = {}
        all_logs: list[Path] = []
        for case in all_cases:
            files = copy_segments(broker, case, staging)
            logs = [f for f in files if f.suffix == ".log"]
            batches = [b for log in logs for b in read_batches(log)]
            check_case(case, batches)
            all_logs += logs
            codec_of_log.update({log: case.codec for log in logs})
            topics[case.name] = topic_json(case, files, batches)
        check_with_dump_log_segments(all_logs, codec_of_log)

        expected = {
            "schema_version": 1,
            "kafka_version": kafka_version(),
            "confluent_kafka_version": confluent_kafka.__version__,
            "librdkafka_version": confluent_kafka.libversion()[0],
            "generated_by": "python -m tests.golden.make_golden",
            "base_timestamp_ms": BASE_TIMESTAMP_MS,
            "topics": topics,
        }
        shutil.rmtree(segments_dir, ignore_errors=True)
        staging.rename(segments_dir)
        (out_dir / "expected.json").write_text(to_json(expected) + "\n", encoding="utf-8")
    finally:
        if args.keep_broker_dir:
            print(f"broker dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(f.stat().st_size for f in segments_dir.rglob("*") if f.is_file())
    print(f"wrote {segments_dir} ({total} bytes) and {out_dir / 'expected.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
