"""``segcompact delete-records``: log start offsets moved forward (KIP-107), from the JSON file
kafka-delete-records.sh takes."""

from __future__ import annotations

from segcompact.app.preconditions import lease, load
from segcompact.app.reply import EXIT_DATA, Reply
from segcompact.app.session import session
from segcompact.clock import job_clock
from segcompact.compaction.delete_records import parse_offset_json
from segcompact.errors import UsageError


def delete_records(config_path: str, offset_json_file: str, *, jvm_output: str | None) -> Reply:
    """Each partition's new low watermark, or its error (exit code 1 then)."""
    config = load(config_path)
    path = offset_json_file
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    requests = parse_offset_json(text, path)
    from segcompact.spark.delete_records import delete_records as move_log_starts
    from segcompact.spark.tables import Tables

    with lease(config, "delete-records"):
        spark = session(config, jvm_output)
        tables = Tables.of(config)
        tables.ensure(spark)
        outcomes = move_log_starts(spark, tables, requests, job_clock().now_ms())
    lines = ["Records delete operation completed:"]
    for (topic, partition), o in sorted(outcomes.items()):
        result = f"low_watermark: {o.low_watermark}" if o.error is None else f"error: {o.error}"
        lines.append(f"partition: {topic}-{partition}\t{result}")
    return Reply(tuple(lines), code=EXIT_DATA if any(o.error for o in outcomes.values()) else 0)
