"""A partition handed from one broker to another (a reassignment, a replaced broker): the
shipper that claimed it is gone, and another broker's shipper takes it over once the first
one's lease has been gone for longer than ``lease_timeout_ms``, going on from where the
manifest ends. Time is a manual clock: nothing waits."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from segcompact.clock import ManualClock
from segcompact.config.ship import parse_ship_config
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from segcompact.ship.manifest import Owner, PartitionManifest
from segcompact.ship.shipper import Shipper
from segcompact.storage import LocalFileSystem
from tests.support.ship import manifest_entries

NOW_MS = 1_700_000_000_000
TIMEOUT_MS = 60_000


def _segments(partition: Path, *bases: int) -> None:
    for base in bases:
        batch = build_batch([Record(base, NOW_MS, b"k", b"v%d" % base)])
        SampleSegment(base, [batch]).write(partition)


def _broker(root: Path, directory_id: str) -> Path:
    root.mkdir()
    (root / "meta.properties").write_text(f"node.id=1\ndirectory.id={directory_id}\n")
    return root


def _shipper(log_dir: Path, to: Path, clock: ManualClock) -> Shipper:
    settings = {"log_dirs": [str(log_dir)], "to": str(to), "topics": ["orders"]}
    config = parse_ship_config({"ship": {**settings, "lease_timeout_ms": TIMEOUT_MS}}, "ship.toml")
    return Shipper(config, clock=clock)


def test_a_partition_whose_shipper_is_gone_is_taken_over_after_the_lease_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    to = tmp_path / "lake"
    old, new = _broker(tmp_path / "broker-1", "dir-1"), _broker(tmp_path / "broker-2", "dir-2")
    _segments(old / "orders-0", 0, 10, 20)  # rolled 0 and 10
    _segments(new / "orders-0", 0, 15, 20, 30)  # the replica, rolled elsewhere: 0, 15 and 20
    clock = ManualClock(NOW_MS)
    first = _shipper(old, to, clock)
    with first.lease():
        assert first.poll().shipped == 2  # then it stops: its lease released, never renewed
    released_ms = clock.now_ms()

    taker = _shipper(new, to, clock)
    clock.current_ms = released_ms + 2 * TIMEOUT_MS - 1  # expired, then not quite one more timeout
    waiting = taker.poll()
    assert (waiting.elsewhere, waiting.shipped) == (1, 0)

    clock.current_ms = released_ms + 2 * TIMEOUT_MS
    caplog.set_level(logging.WARNING, "segcompact")
    with taker.lease():
        taken = taker.poll()
        assert (taken.partitions, taken.elsewhere, taken.shipped, taken.gaps) == (1, 0, 1, 0)
        assert any(
            "orders-0: taken over from log dir dir-1" in r.getMessage() for r in caplog.records
        )
        manifest = PartitionManifest(LocalFileSystem(), str(to / "orders-0"))
        entries = manifest_entries(manifest)
        assert [(e.start, e.end) for e in entries] == [(0, 10), (10, 20), (20, 30)]
        assert manifest.current_owner() == Owner("dir-2", 1)

        # The first broker's shipper comes back (stalled, its cache saying it owns the
        # partition; or restarted): it leaves the partition to the live taker.
        _segments(old / "orders-0", 30, 40)
        stalled = first.poll()
        assert (stalled.elsewhere, stalled.shipped) == (1, 0)
        restarted = _shipper(old, to, clock).poll()
        assert (restarted.elsewhere, restarted.shipped) == (1, 0)
        assert manifest_entries(manifest) == entries

    # Of two shippers taking over from one owner, one writes the next owner file.
    assert not manifest.take_over(Owner("dir-1", 0), "dir-3")
    assert manifest.current_owner() == Owner("dir-2", 1)
