"""The upkeep: what is due without input, in its order.

1. **graduation**: young records (``min.compaction.lag.ms``) that have aged enter the state;
2. **expiry**: tombstones whose delete horizon has passed leave it (KIP-534);
3. **erasure rounds** (topics with ``gdpr.deletion.sla.ms``): a round opened when one is due,
   the deleted rows purged from their files (``spark.erasure``);
4. **materialisation**: the partitions that are due re-materialised, with the open rounds'
   among them, in one pass;
5. the rounds completed as far as they can be now: old output versions removed, VACUUM, the
   ledger written.

The job runs it after a micro-batch and on a timer (``spark.job``); ``segcompact purge`` once
(``force``: every pending erasure now); ``segcompact materialize`` runs its first two steps and a
materialisation of the partitions it selects.
"""

from __future__ import annotations

import logging
from typing import Any

from segcompact.clock import Clock
from segcompact.spark.erasure import Eraser, RoundReport
from segcompact.spark.materialize import Materializer
from segcompact.spark.merge import BatchMerger
from segcompact.timing import timed

log = logging.getLogger(__name__)


class Upkeep:
    def __init__(
        self, merger: BatchMerger, eraser: Eraser, materializer: Materializer, clock: Clock
    ) -> None:
        self.merger = merger
        self.eraser = eraser
        self.materializer = materializer
        self.clock = clock

    def run(self, *, force: bool = False, settled: bool = False) -> RoundReport:
        """Every step (``settled``: a micro-batch has just graduated and expired, the first
        two)."""
        if not settled:
            self.merger.settle(self.clock.now_ms())
        rounds = self.eraser.advance(expired_until=self.merger.expired_until, force=force)
        with timed(log, "materialize"):
            results = self.materializer.run(erase=rounds.erase)
        return self.eraser.complete(rounds, results)

    def materialize(
        self, *, topic: str | None, partition: int | None, force: bool
    ) -> list[dict[str, Any]]:
        """Graduation, expiry, then the partitions selected that are due (``force``: due or
        not) re-materialised; one result per partition written."""
        self.merger.settle(self.clock.now_ms())
        return self.materializer.run(topic=topic, partition=partition, force=force)
