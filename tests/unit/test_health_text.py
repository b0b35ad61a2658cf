"""``segcompact health``'s text gives the last batch's age for people."""

from __future__ import annotations

from segcompact.health import Health

NOW = 1_795_854_950_740


def test_the_last_batch_age_is_a_duration() -> None:
    health = Health(running=None, last_batch_ms=NOW - 93_600_000, uncleanable=[], breaches=0)
    assert health.text(NOW).splitlines()[1] == "last batch: 2026-11-27T06:35:50.740Z (1d 2h ago)"
    idle = Health(running=None, last_batch_ms=None, uncleanable=[], breaches=0)
    assert idle.text(NOW).splitlines()[1] == "last batch: none yet"


def test_unverified_partitions_are_listed_and_fail_their_own_check() -> None:
    line = (
        "users-0: unverified, not merged since 2026-11-27T00:00:00.000Z (/in/x.log: not merged yet)"
    )
    health = Health(
        running="run", last_batch_ms=None, uncleanable=[], breaches=0, unverified=[line]
    )
    lines = health.text(NOW).splitlines()
    assert lines[-2:] == ["partitions with source data not merged, unverified: 1", f"  {line}"]
    assert health.failed() == ["unverified"] and health.as_json()["unverified"] == [line]
    assert Health(running="run", last_batch_ms=None, uncleanable=[], breaches=0).failed() == []
