"""``segcompact dump``: what ``kafka-dump-log.sh`` prints, as text or one JSON object a line."""

from __future__ import annotations

import base64
import enum
import json
import os
from collections.abc import Iterator
from typing import Any, TextIO

from segcompact.errors import UsageError
from segcompact.format.batch import RecordBatch
from segcompact.format.control import control_type
from segcompact.format.index import read_offset_index, read_time_index
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader, base_offset_of
from segcompact.storage import LocalInputFile


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _control_type(record: Record) -> str | None:
    kind = control_type(record.key)
    if kind is None:
        return None
    return kind.name if isinstance(kind, enum.IntEnum) else f"UNKNOWN({kind})"


def batch_summary(path: str, batch: RecordBatch) -> dict[str, Any]:
    return {
        "file": path,
        "position": batch.position,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "count": batch.records_count,
        "size": batch.size,
        "magic": batch.magic,
        "compression": batch.compression.label,
        "crc": batch.crc,
        "crc_valid": batch.crc_valid,
        "timestamp_type": batch.timestamp_type.name,
        "max_timestamp": batch.max_timestamp,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "delete_horizon_ms": batch.delete_horizon_ms,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "partition_leader_epoch": batch.partition_leader_epoch,
    }


def record_summary(record: Record, control: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_b64": _b64(record.key),
        "value_b64": _b64(record.value),
        "headers": [[k, _b64(v)] for k, v in record.headers],
        "attributes": record.attributes,
    }
    if control:
        out["control_type"] = _control_type(record)
    return out


def _text_batch(s: dict[str, Any]) -> str:
    ts_name = {"CREATE_TIME": "CreateTime", "LOG_APPEND_TIME": "LogAppendTime"}.get(
        s["timestamp_type"], "NoTimestamp"
    )
    horizon = s["delete_horizon_ms"]
    return (
        f"baseOffset: {s['base_offset']} lastOffset: {s['last_offset']} count: {s['count']} "
        f"baseSequence: {s['base_sequence']} producerId: {s['producer_id']} "
        f"producerEpoch: {s['producer_epoch']} partitionLeaderEpoch: "
        f"{s['partition_leader_epoch']} isTransactional: {str(s['is_transactional']).lower()} "
        f"isControl: {str(s['is_control']).lower()} deleteHorizonMs: "
        f"{'none' if horizon is None else horizon} position: {s['position']} "
        f"{ts_name}: {s['max_timestamp']} size: {s['size']} magic: {s['magic']} "
        f"compresscodec: {s['compression']} crc: {s['crc']} isvalid: "
        f"{str(s['crc_valid']).lower()}"
    )


def _text_record(r: dict[str, Any], record: Record) -> str:
    line = f"| offset: {r['offset']} timestamp: {r['timestamp']}"
    if "control_type" in r:
        return f"{line} endTxnMarker: {r['control_type']}"
    key = "null" if record.key is None else record.key.decode("utf-8", "replace")
    value = "null" if record.value is None else record.value.decode("utf-8", "replace")
    headers = ", ".join(k for k, _ in record.headers)
    return f"{line} headerKeys: [{headers}] key: {key} payload: {value}"


def _log_lines(path: str, deep: bool, as_json: bool) -> Iterator[str]:
    for batch in SegmentReader(LocalInputFile(path), verify_crc=False):
        summary = batch_summary(path, batch)
        records = batch.records() if deep else []
        rows = [record_summary(r, batch.is_control) for r in records]
        if as_json:
            if deep:
                summary["records"] = rows
            yield json.dumps(summary)
        else:
            yield _text_batch(summary)
            yield from (_text_record(row, r) for row, r in zip(rows, records, strict=True))


def _index_lines(path: str, as_json: bool) -> Iterator[str]:
    base = base_offset_of(path)
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".timeindex"):
        for ts, offset in read_time_index(data, base):
            yield (
                json.dumps({"file": path, "timestamp": ts, "offset": offset})
                if as_json
                else f"timestamp: {ts} offset: {offset}"
            )
    else:
        for offset, position in read_offset_index(data, base):
            yield (
                json.dumps({"file": path, "offset": offset, "position": position})
                if as_json
                else f"offset: {offset} position: {position}"
            )


def dump(paths: list[str], *, deep: bool, as_json: bool, out: TextIO) -> None:
    """Print every batch (and with ``deep`` every record) of each file.

    A corrupt batch stops that file after the good batches were printed, by raising
    :class:`~segcompact.errors.CorruptBatchError` naming file, position and reason.
    """
    for path in paths:  # every name checked before anything is printed
        if not os.path.isfile(path):
            raise UsageError(f"{path}: no such file")
        if not path.endswith((".log", ".index", ".timeindex")):
            raise UsageError(f"{path}: not a .log, .index or .timeindex file")
    for path in paths:
        if not as_json:
            print(f"Dumping {path}", file=out)
        if path.endswith(".log"):
            lines = _log_lines(path, deep, as_json)
        else:
            lines = _index_lines(path, as_json)
        for line in lines:
            print(line, file=out)
