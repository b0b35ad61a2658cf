"""The job's log lines carry their time: ISO-8601 UTC to the millisecond, in text and JSON."""

from __future__ import annotations

import json
import logging

from segcompact.cli import _JsonLines, _TextLines


def _record() -> logging.LogRecord:
    record = logging.LogRecord(
        "segcompact.spark.job", logging.INFO, "job.py", 1, "batch %d", (3,), None
    )
    record.created = 1_795_854_950.740
    return record


def test_text_line_starts_with_its_time() -> None:
    line = _TextLines().format(_record())
    assert line == "2026-11-28T08:35:50.740Z segcompact: segcompact.spark.job: batch 3"


def test_json_line_has_the_same_time() -> None:
    entry = json.loads(_JsonLines().format(_record()))
    assert entry == {
        "time": "2026-11-28T08:35:50.740Z",
        "level": "INFO",
        "logger": "segcompact.spark.job",
        "message": "batch 3",
    }
