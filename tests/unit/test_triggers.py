"""Re-materialisation triggers with an injected time (nothing sleeps)."""

from __future__ import annotations

import pytest

from segcompact.compaction.triggers import PartitionStats, Reason, decide
from segcompact.config import TopicConfig

HOUR = 3_600_000


def stats(
    dirty: int,
    clean: int,
    first_dirty: int | None = 0,
    horizon: int | None = None,
    moved: bool = False,
) -> PartitionStats:
    return PartitionStats(dirty, clean, first_dirty, horizon, moved)


@pytest.mark.parametrize(
    ("s", "topic", "now", "reasons"),
    [
        (stats(50, 50), TopicConfig(), 0, (Reason.DIRTY_RATIO,)),
        (stats(49, 51), TopicConfig(), 0, ()),
        (stats(90, 10), TopicConfig(min_compaction_lag_ms=HOUR), HOUR - 1, ()),
        (stats(90, 10), TopicConfig(min_compaction_lag_ms=HOUR), HOUR, (Reason.DIRTY_RATIO,)),
        (stats(1, 99), TopicConfig(max_compaction_lag_ms=HOUR), HOUR, ()),
        (stats(1, 99), TopicConfig(max_compaction_lag_ms=HOUR), HOUR + 1, (Reason.MAX_LAG,)),
        (stats(0, 99, None, horizon=10), TopicConfig(), 9, ()),
        (stats(0, 99, None, horizon=10), TopicConfig(), 10, (Reason.HORIZON,)),
        (stats(0, 99, None, moved=True), TopicConfig(), 0, (Reason.LOG_START,)),
        (stats(0, 0, None), TopicConfig(), 10**12, ()),
    ],
)
def test_decisions(
    s: PartitionStats, topic: TopicConfig, now: int, reasons: tuple[Reason, ...]
) -> None:
    assert decide(s, topic, now).reasons == reasons


def test_compaction_delay_is_how_far_past_the_max_lag() -> None:
    d = decide(
        stats(1, 99, first_dirty=1_000), TopicConfig(max_compaction_lag_ms=HOUR), 1_000 + HOUR + 5
    )
    assert d.reasons == (Reason.MAX_LAG,) and d.compaction_delay_ms == 5 and d.dirty_ratio == 0.01


def test_an_uncleanable_partition_is_never_due_but_its_delay_still_shows() -> None:
    s = PartitionStats(90, 10, 0, 0, log_start_moved=True, uncleanable=True)
    d = decide(s, TopicConfig(max_compaction_lag_ms=HOUR), HOUR + 7)
    assert d.reasons == () and d.compaction_delay_ms == 7
