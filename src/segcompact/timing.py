"""Step timings for the job's log: how long each step of a micro-batch or an upkeep took
(``segcompact run --verbose`` shows them)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator


@contextlib.contextmanager
def timed(log: logging.Logger, step: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        log.debug("%s: %.1f s", step, time.monotonic() - start)
