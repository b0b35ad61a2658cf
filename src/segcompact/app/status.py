"""``segcompact status``: per partition, what the job's tables say, and what it has not read."""

from __future__ import annotations

import json

from segcompact.app.preconditions import load
from segcompact.app.reply import Reply
from segcompact.app.session import ensured
from segcompact.clock import job_clock
from segcompact.ship.gaps import not_shipped
from segcompact.status import read_status, skipped, text


def status(config_path: str, *, as_json: bool, wide: bool, jvm_output: str | None) -> Reply:
    config = load(config_path)
    now = job_clock().now_ms()
    rows = read_status(config, now, ensured(config, jvm_output))
    not_read = skipped(config)
    gaps = not_shipped(config.source.paths, config.storage)  # by segcompact ship
    if as_json:
        shown = json.dumps({"partitions": rows, "skipped": not_read, "not_shipped": gaps}, indent=2)
    else:
        shown = text(rows, now, wide=wide, skipped=[*not_read, *gaps])
    return Reply((shown,))
