"""Delta commit conflicts with another writer of a job's tables (a user's OPTIMIZE, REORG or
ALTER TABLE): retried, not fatal.

Delta commits optimistically: a transaction that finds, at commit, that a concurrent one
added or removed files it read, or changed the table's metadata, fails with one of Delta's
concurrent-modification exceptions (``ConcurrentAppendException`` and its siblings).
Everything the job runs per micro-batch and per upkeep is idempotent (each table write carries
the batch's transaction id; a materialisation plans its version again), so the whole step is
run again on the newer snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from delta import exceptions as delta

from segcompact.errors import root_cause

T = TypeVar("T")
# Siblings in delta-spark's Python API, not subclasses of the first: each named.
CONFLICTS = (
    delta.DeltaConcurrentModificationException,
    delta.ConcurrentWriteException,
    delta.MetadataChangedException,
    delta.ProtocolChangedException,
    delta.ConcurrentAppendException,
    delta.ConcurrentDeleteReadException,
    delta.ConcurrentDeleteDeleteException,
    delta.ConcurrentTransactionException,
)
ATTEMPTS = 5

log = logging.getLogger(__name__)


def retry_conflicts(step: Callable[[], T], what: str, attempts: int = ATTEMPTS) -> T:
    """``step()``, run again after a Delta commit conflict, up to ``attempts`` times in all."""
    attempt = 1
    while True:
        try:
            return step()
        except CONFLICTS as e:
            if attempt >= attempts:
                raise
            attempt += 1
            log.warning(
                "%s: a concurrent commit conflicted (%s); attempt %d of %d",
                what,
                root_cause(str(e)),
                attempt,
                attempts,
            )
