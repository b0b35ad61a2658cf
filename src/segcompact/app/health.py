"""``segcompact health``: whether the job runs and is well, for probes."""

from __future__ import annotations

import json
from collections.abc import Collection

from segcompact.app.preconditions import load
from segcompact.app.reply import EXIT_DATA, Reply
from segcompact.app.session import ensured
from segcompact.clock import job_clock
from segcompact.health import check


def health(
    config_path: str, *, as_json: bool, fail_on: Collection[str], jvm_output: str | None
) -> Reply:
    """The checks' results; exit code 1 when one of ``fail_on`` failed."""
    config = load(config_path)
    now = job_clock().now_ms()
    found = check(config, now, ensured(config, jvm_output))
    shown = json.dumps(found.as_json(), indent=2) if as_json else found.text(now)
    return Reply((shown,), code=EXIT_DATA if set(found.failed()) & set(fail_on) else 0)
