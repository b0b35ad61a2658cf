"""Whether delta-rs shows nothing due now, so that ``materialize`` and ``purge`` need not start
Spark to find it out."""

from __future__ import annotations

from typing import Any

from segcompact.clock import job_clock
from segcompact.config import CompactorConfig
from segcompact.due import nothing_due

NOTHING_DUE = "nothing due"


def nothing_due_now(config: CompactorConfig, *, erasure: bool, **selection: Any) -> bool:
    return nothing_due(config, job_clock().now_ms(), erasure=erasure, **selection)
