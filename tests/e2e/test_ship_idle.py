"""What keeps an idle shipper under 1 % of a core: a poll with nothing to ship does no work
beyond listing each partition directory. Counted, not timed: every call through the storage
seam, on the log dir and on the target (``make bench-ship`` times it: CPU a poll a partition).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from segcompact.clock import ManualClock
from segcompact.config.ship import parse_ship_config
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from segcompact.ship.shipper import Shipper
from segcompact.storage import FileSystem, Storage

NOW_MS = 1_700_000_000_000
PARTITIONS = 30


class CountingFileSystem:
    """A file system that counts the calls made to it, by method, and passes them on."""

    def __init__(self, fs: FileSystem) -> None:
        self._fs = fs
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._fs, name)
        if not callable(found) or name in ("abspath", "join"):  # path arithmetic, no I/O
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted


def _shipper(log_dir: Path, to: Path) -> Shipper:
    config = parse_ship_config(
        {"ship": {"log_dirs": [str(log_dir)], "to": str(to), "topics": ["orders"]}}, "ship.toml"
    )
    return Shipper(config, clock=ManualClock(NOW_MS))


def _counting(shipper: Shipper) -> tuple[CountingFileSystem, CountingFileSystem]:
    """The shipper's log dirs' and target's file systems, counted from now on."""
    local = CountingFileSystem(shipper.storage.resolve(str(shipper.settings.log_dirs[0]))[0])
    target = CountingFileSystem(shipper.target_fs)
    resolve: Callable[[str], tuple[FileSystem, str]] = shipper.storage.resolve

    class Counted(Storage):
        def resolve(self, location: str) -> tuple[FileSystem, str]:
            _, path = resolve(location)
            return local, path

    shipper.storage = Counted()
    shipper.target_fs = target
    return local, target


def test_an_idle_poll_lists_each_partition_once_and_touches_no_target(tmp_path: Path) -> None:
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    for p in range(PARTITIONS):
        for base in (0, 10, 20):  # two rolled, one active
            batch = build_batch([Record(base, NOW_MS, b"k", b"v")])
            SampleSegment(base, [batch]).write(log_dir / f"orders-{p}")
    (log_dir / "replication-offset-checkpoint").write_text(
        f"0\n{PARTITIONS}\n" + "".join(f"orders {p} 21\n" for p in range(PARTITIONS))
    )
    running = _shipper(log_dir, to)
    assert running.poll().shipped == 2 * PARTITIONS

    local, target = _counting(running)
    polls = 3
    for _ in range(polls):
        idle = running.poll()
        assert (idle.shipped, idle.errors, idle.partitions) == (0, 0, PARTITIONS)
    assert target.calls == Counter()  # nothing of the target: listed, read or written
    # A poll: the log dir listed and its high-watermark checkpoint read; each partition's
    # directory listed. Nothing opened, stat'ed or read besides.
    assert local.calls == Counter({"list_dir": polls * (1 + PARTITIONS), "read_bytes": polls}), (
        local.calls
    )
