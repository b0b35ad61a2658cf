"""``segcompact dump``: what ``kafka-dump-log.sh`` prints, as text or one JSON object a line."""

from __future__ import annotations

import base64
import enum
import json
import os
from collections.abc import Iterator
from typing import Any, TextIO

from segcompact.errors import CorruptBatchError, UsageError
from segcompact.format.attributes import TimestampType
from segcompact.format.batch import RecordBatch
from segcompact.format.control import VALUE, control_type
from segcompact.format.index import read_offset_index, read_time_index
from segcompact.format.logdir import parse_segment_file
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
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


# Kafka's TimestampType names, as DumpLogSegments prints them.
_TIMESTAMP_NAMES = {
    TimestampType.NO_TIMESTAMP: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}
_INT_MAX = 2**31 - 1


def _sequence(base: int, delta: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: sequences wrap past Int.MAX to 0."""
    if base < 0:
        return base
    return base + delta if base <= _INT_MAX - delta else delta - (_INT_MAX - base) - 1


def _text_batch(batch: RecordBatch) -> str:
    ts_name = _TIMESTAMP_NAMES[batch.timestamp_type]
    if batch.magic >= 2:
        horizon = batch.delete_horizon_ms
        last = _sequence(batch.base_sequence, batch.last_offset - batch.base_offset)
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
            f"lastSequence: {last} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {str(batch.is_transactional).lower()} "
            f"isControl: {str(batch.is_control).lower()} deleteHorizonMs: "
            + ("OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]")
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {batch.position} {ts_name}: {batch.max_timestamp} "
        f"size: {batch.size} magic: {batch.magic} compresscodec: {batch.compression.label} "
        f"crc: {batch.crc} isvalid: {str(batch.crc_valid).lower()}"
    )


def _text_record(batch: RecordBatch, record: Record, print_data: bool) -> str:
    """A record as DumpLogSegments prints it in a deep iteration (``print_data``: with its key
    and payload, each only when not null, decoded as UTF-8)."""
    ts_name = _TIMESTAMP_NAMES[batch.timestamp_type]
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    line = (
        f"| offset: {record.offset} {ts_name}: {record.timestamp} "
        f"keySize: {key_size} valueSize: {value_size}"
    )
    if batch.magic >= 2:
        sequence = _sequence(batch.base_sequence, record.offset - batch.base_offset)
        keys = ",".join(k for k, _ in record.headers)
        line += f" sequence: {sequence} headerKeys: [{keys}]"
    if batch.is_control:
        kind = _control_type(record)
        value = record.value or b""
        epoch = VALUE.unpack_from(value)[1] if len(value) >= VALUE.size else -1
        return f"{line} endTxnMarker: {kind} coordinatorEpoch: {epoch}"
    if print_data:
        if record.key is not None:
            line += f" key: {record.key.decode('utf-8', 'replace')}"
        if record.value is not None:
            line += f" payload: {record.value.decode('utf-8', 'replace')}"
    return line


def _log_lines(path: str, base: int, deep: bool, print_data: bool, as_json: bool) -> Iterator[str]:
    """The text to print, in pieces: a batch's JSON line is written a record at a time, so that
    memory holds one record, not a batch of millions of them (nor a file of them)."""
    if not as_json:
        yield f"Log starting offset: {base}\n"
    for batch in SegmentReader(LocalInputFile(path), verify_crc=False):
        if deep:
            for _ in batch.iter_records():  # a corrupt batch stops the file before its line
                pass
        records = batch.iter_records() if deep else iter(())
        if as_json:
            summary = json.dumps(batch_summary(path, batch))
            if not deep:
                yield summary + "\n"
                continue
            yield summary[:-1] + ', "records": ['  # the JSON of the summary with its records
            for i, r in enumerate(records):
                yield (", " if i else "") + json.dumps(record_summary(r, batch.is_control))
            yield "]}\n"
        else:
            yield _text_batch(batch) + "\n"
            yield from (_text_record(batch, r, print_data) + "\n" for r in records)


def _index_lines(
    path: str, base: int, time_index: bool, sanity_only: bool, as_json: bool
) -> Iterator[str]:
    with open(path, "rb") as f:
        data = f.read()
    entries = read_time_index(data, base) if time_index else read_offset_index(data, base)
    if not as_json and not entries and not time_index:
        yield f"{path} is empty."
        return
    if sanity_only:
        check_index(path, base, entries, time_index)
        if not as_json:
            yield f"{path} passed sanity check."
        return
    for a, b in entries:
        if time_index:
            yield (
                json.dumps({"file": path, "timestamp": a, "offset": b})
                if as_json
                else f"timestamp: {a} offset: {b}"
            )
        else:
            yield (
                json.dumps({"file": path, "offset": a, "position": b})
                if as_json
                else f"offset: {a} position: {b}"
            )


def check_index(path: str, base: int, entries: list[tuple[int, int]], time_index: bool) -> None:
    """Kafka's index sanity check: entries rising (an offset index's offsets and positions, a
    time index's timestamps and offsets), none below the segment's base offset ``base``."""
    for i in range(1, len(entries)):
        if entries[i][0] <= entries[i - 1][0] and not time_index:
            raise CorruptBatchError(
                f"{path}: corrupt index: entry {i} offset {entries[i][0]} is not above the "
                f"previous entry's {entries[i - 1][0]}"
            )
        if entries[i][1] < entries[i - 1][1]:
            raise CorruptBatchError(
                f"{path}: corrupt index: entry {i} ({entries[i][1]}) is below the previous "
                f"entry's ({entries[i - 1][1]})"
            )
    for offset in (e[1] if time_index else e[0] for e in entries):
        if offset < base:
            raise CorruptBatchError(
                f"{path}: corrupt index: offset {offset} is below the base offset {base}"
            )


def dump(
    paths: list[str],
    *,
    deep: bool,
    as_json: bool,
    out: TextIO,
    print_data: bool = False,
    index_sanity: bool = False,
) -> None:
    """Print every batch (and with ``deep`` every record) of each file, as
    ``kafka-dump-log.sh`` does with the same flags: ``print_data`` (``--print-data-log``) adds
    each record's key and payload and implies ``deep``; ``index_sanity``
    (``--index-sanity-check``) checks an index instead of printing it.

    A corrupt batch stops that file after the good batches were printed, by raising
    :class:`~segcompact.errors.CorruptBatchError` naming file, position and reason.
    """
    named = {}
    for path in paths:  # every name checked before anything is printed
        if os.path.isdir(path):
            raise UsageError(f"{path}: is a directory (name the segment or index files in it)")
        if not os.path.isfile(path):
            raise UsageError(
                f"{path}: no such file"
                if not os.path.exists(path)
                else f"{path}: not a regular file"
            )
        parsed = parse_segment_file(path)
        if parsed is None or parsed[1] not in (".log", ".index", ".timeindex"):
            raise UsageError(
                f"{path}: not a segment's .log, .index or .timeindex file "
                "(<20-digit base offset>.log, as Kafka names them)"
            )
        named[path] = parsed
    for path in paths:
        if not as_json:
            print(f"Dumping {path}", file=out)
        base, suffix = named[path]
        if suffix == ".log":
            lines = _log_lines(path, base, deep or print_data, print_data, as_json)
        else:
            time_index = suffix == ".timeindex"
            indexed = _index_lines(path, base, time_index, index_sanity, as_json)
            lines = (line + "\n" for line in indexed)
        for piece in lines:
            out.write(piece)
