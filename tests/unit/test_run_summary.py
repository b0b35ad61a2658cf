"""``run --once``'s last line: what it read, materialised and found uncleanable."""

from __future__ import annotations

from typing import Any

from segcompact.run_summary import RunSummary


def _stats(topic: str, partition: int, reason: str | None = None, **n: int) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "segments": n.get("segments", 2),
        "records": n.get("records", 100),
        "uncleanable_reason": reason,
    }


def test_a_clean_run_adds_up_its_batches() -> None:
    s = RunSummary()
    s.add_batch([_stats("orders", 0), _stats("orders", 1, records=1)])
    s.add_batch([_stats("orders", 0, segments=1, records=0)])
    s.bytes, s.keys, s.uncleanable = 6 << 20, 40, {}
    s.materialized = {("orders", 0), ("orders", 1)}
    assert s.line() == (
        "run --once: 5 segments (6.00 MiB) of 2 partitions read: 101 records, 40 keys held; "
        "2 partitions materialised; 0 partitions uncleanable"
    )
    assert s.failure() is None


def test_a_partition_made_uncleanable_in_this_run_fails_it_by_name() -> None:
    s = RunSummary()
    s.add_batch([_stats("users", 0, "truncated: runs past the end of the file"), _stats("a", 0)])
    s.keys, s.uncleanable = None, {("old", 3): "CRC mismatch", ("users", 0): "truncated: …"}
    line = s.line()
    assert "keys held unknown" in line  # not read: not claimed
    assert line.endswith("2 partitions uncleanable: old-3, users-0 (new)")
    assert (
        s.failure()
        == "uncleanable since this run: users-0: truncated: runs past the end of the file"
    )


def test_an_already_uncleanable_partition_does_not_fail_the_run() -> None:
    s = RunSummary(uncleanable={("old", 3): "CRC mismatch"}, keys=0)
    assert s.line().endswith("1 partition uncleanable: old-3")
    assert s.failure() is None


def test_without_the_upkeep_only_what_this_run_found_is_claimed() -> None:
    s = RunSummary()
    s.add_batch([_stats("users", 0, "bad")])
    assert s.uncleanable is None
    assert s.line().endswith("1 partition found uncleanable: users-0 (new)")
