"""``segcompact health``'s text gives the last batch's age for people."""

from __future__ import annotations

from segcompact.health import Health

NOW = 1_795_854_950_740


def test_the_last_batch_age_is_a_duration() -> None:
    health = Health(running=None, last_batch_ms=NOW - 93_600_000, uncleanable=[], breaches=0)
    assert health.text(NOW).splitlines()[1] == "last batch: 2026-11-27T06:35:50.740Z (1d 2h ago)"
    idle = Health(running=None, last_batch_ms=None, uncleanable=[], breaches=0)
    assert idle.text(NOW).splitlines()[1] == "last batch: none yet"
