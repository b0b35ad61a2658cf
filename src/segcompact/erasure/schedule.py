"""When erasure work is due, and whether a deletion met its deadline. Pure: no Spark, no I/O.

The timeline of one deletion appended at A under an SLA of S (docs/deletion-sla.md states it):

- it is merged at the next micro-batch (``[stream] trigger_interval``, at most S/4);
- erasure is due at A + S/4 (:data:`LEAD`): late enough that one round serves every change
  that fell due since the last, early enough to leave three quarters of the SLA;
- the upkeep that opens the round runs within ``materialize_check_interval_ms`` (at most S/4),
  so by S/2; the round's target is every table's version then;
- VACUUM removes files once ``delta.deletedFileRetentionDuration`` has passed since the commit
  that removed them (at most S/4, :func:`~segcompact.config.sla.retention_ms`), so the target
  is covered by 3/4 S;

and the last quarter is the margin for the work itself (REORG, re-materialisation, removal of
old output versions, the VACUUMs, the ledger's commits), micro-batches run in between, and
retries. The config's parser refuses waits longer than a quarter (:mod:`segcompact.config.sla`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from segcompact.config.sla import QUARTER

LEAD = 4  # erasure is due at 1/LEAD of the SLA

# The stages of an erasure, in the order a round does them; a deletion's time to erasure ends
# at the last one (VACUUM comes last: it removes what re-materialisation left behind too).
STAGES = ("seen", "merged", "purged", "materialized", "versions_removed", "vacuumed")
# After the tombstone's horizon, the key itself is erased the same way (not timed by the SLA).
EXPIRED = "tombstone_expired"
# Rows of a round (every superseded value of a partition) have no seen/merged stage of their own.
ROUND_STAGES = STAGES[2:]


class Status:
    PENDING = "pending"
    MET = "met"
    BREACHED = "breached"


def erasure_due(appended_ms: int, sla_ms: int, now_ms: int, ahead_ms: int = 0) -> bool:
    """Whether the erasure of values superseded at ``appended_ms`` is due, or falls due within
    ``ahead_ms`` (until the next upkeep, at most a quarter of the SLA): a change that would
    fall due just after this round must not wait for the next one."""
    return now_ms + min(ahead_ms, sla_ms // QUARTER) >= appended_ms + sla_ms // LEAD


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    completed_ms: int | None
    breach_stage: str | None


def outcome(
    stages: Mapping[str, int | None], required: Sequence[str], deadline_ms: int, now_ms: int
) -> Outcome:
    """A row's status from its stage times: met when every required stage was done by the
    deadline; breached at the first stage done late, or still undone once the deadline passed."""
    for stage in required:
        done = stages.get(stage)
        if done is None:
            if now_ms > deadline_ms:
                return Outcome(Status.BREACHED, None, stage)
            return Outcome(Status.PENDING, None, None)
        if done > deadline_ms:
            completed = _completed(stages, required)
            return Outcome(Status.BREACHED, completed, stage)
    return Outcome(Status.MET, _completed(stages, required), None)


def row_outcome(row: Mapping[str, Any], required: Sequence[str], now_ms: int) -> Outcome:
    """:func:`outcome` of a ledger row: its ``<stage>_at`` times and ``deadline`` in ms."""
    return outcome({s: row.get(f"{s}_at") for s in required}, required, row["deadline"], now_ms)


def _completed(stages: Mapping[str, int | None], required: Sequence[str]) -> int | None:
    times = [stages.get(s) for s in required]
    return None if any(t is None for t in times) else max(t for t in times if t is not None)


def percentile(values: Sequence[int], fraction: float) -> int | None:
    """The nearest-rank percentile (p50: ``0.5``) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))  # ceil without floats' surprises
    return ordered[int(rank) - 1]
