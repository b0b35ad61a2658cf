"""When a partition is due for re-materialisation (KIP-58, KIP-354, KIP-534, KIP-107).

Pure: the partition's numbers and the topic's config in, a decision with its reasons out.
Kafka's cleaner decides the same way (``LogCleanerManager.grabFilthiestCompactedLog``): a log
is cleanable when its dirty ratio reaches ``min.cleanable.dirty.ratio`` and its dirty records
are older than ``min.compaction.lag.ms``, and must be cleaned once its earliest dirty record is
older than ``max.compaction.lag.ms``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from segcompact.clock import epoch_ms
from segcompact.config import CompactorConfig, TopicConfig


class Reason(enum.StrEnum):
    DIRTY_RATIO = "dirty ratio"
    MAX_LAG = "max compaction lag"
    HORIZON = "tombstone horizon passed"
    LOG_START = "log start offset moved"
    FORCED = "forced"
    DELETION_SLA = "deletion SLA"  # an erasure round: superseded values leave the output


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """What the partitions and state tables say about one partition (times in epoch ms)."""

    dirty_bytes: int
    clean_bytes: int
    first_dirty_timestamp: int | None  # earliest timestamp not yet materialised
    next_horizon: int | None  # earliest delete horizon among materialised tombstones
    log_start_moved: bool = False
    uncleanable: bool = False  # a corrupt segment: Kafka's cleaner skips such a partition too


@dataclass(frozen=True, slots=True)
class Decision:
    reasons: tuple[Reason, ...]  # empty: not due
    dirty_ratio: float
    compaction_delay_ms: int  # Kafka's max-compaction-delay: how far past max.compaction.lag


def dirty_ratio(stats: PartitionStats) -> float:
    total = stats.dirty_bytes + stats.clean_bytes
    return stats.dirty_bytes / total if total else 0.0


def decide(stats: PartitionStats, topic: TopicConfig, now_ms: int) -> Decision:
    """Whether ``stats`` make the partition due now, and why."""
    ratio = dirty_ratio(stats)
    reasons: list[Reason] = []
    age = None if stats.first_dirty_timestamp is None else now_ms - stats.first_dirty_timestamp
    if (
        stats.dirty_bytes > 0
        and ratio >= topic.min_cleanable_dirty_ratio
        and age is not None
        and age >= topic.min_compaction_lag_ms
    ):
        reasons.append(Reason.DIRTY_RATIO)
    delay = 0
    if age is not None and stats.dirty_bytes > 0 and age > topic.max_compaction_lag_ms:
        reasons.append(Reason.MAX_LAG)
        delay = age - topic.max_compaction_lag_ms
    if stats.next_horizon is not None and stats.next_horizon <= now_ms:
        reasons.append(Reason.HORIZON)
    if stats.log_start_moved:
        reasons.append(Reason.LOG_START)
    if stats.uncleanable:
        reasons.clear()
    return Decision(tuple(reasons), ratio, delay)


def decision(row: Mapping[str, Any], config: CompactorConfig, now_ms: int) -> Decision:
    """Whether the partition of a partitions-table ``row`` is due now, and why: the one place
    that reads such a row as trigger inputs (``status`` and the materialiser both call it, so
    what status calls due is what ``materialize`` writes).

    The horizon is the published output's earliest tombstone horizon (the state's may be later:
    what matters is what a reader of the output still sees); the log start has moved when it
    differs from the one the published version was written at.
    """
    stats = PartitionStats(
        row["dirty_bytes"],
        row["clean_bytes"],
        epoch_ms(row["first_dirty_timestamp"]),
        epoch_ms(row["output_next_horizon"]),
        row["log_start_offset"] != (row["materialized_log_start"] or 0),
        uncleanable=row["uncleanable_reason"] is not None,
    )
    return decide(stats, config.topic(row["topic"]), now_ms)
