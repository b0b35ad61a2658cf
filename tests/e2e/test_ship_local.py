"""``segcompact ship`` on real local files: a broker's partition directories as Kafka lays them
out (its other files beside), shipped to a local target. No Spark: the shipper has none.

One story, poll by poll: rolled segments ship and the active one does not, even as it grows;
once it rolls, it ships whole with what was appended; a cleaner's rewrite of a shipped name is
left alone; a segment deleted before it was shipped is a gap, named in the manifest and the log;
a damaged segment is reported in one line and the others go on; a restart ships nothing twice.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import segcompact
from segcompact.clock import ManualClock
from segcompact.config.ship import parse_ship_config
from segcompact.discovery import skipped_directories
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.writer import segment_name
from segcompact.samples import SampleSegment
from segcompact.ship.gaps import not_shipped
from segcompact.ship.manifest import PartitionManifest
from segcompact.ship.shipper import Shipper
from segcompact.storage import LocalFileSystem, Storage
from tests.support.ship import manifest_entries

NOW_MS = 1_700_000_000_000


def batch(first: int, count: int = 5, key: bytes = b"k") -> bytes:
    return build_batch(
        [
            Record(o, NOW_MS + o, key + b"%d" % (o % 3), b"v%d" % o)
            for o in range(first, first + count)
        ]
    )


def segment(directory: Path, base: int, batches: int = 2) -> Path:
    """A segment of ``batches`` batches of 5 records from ``base``, with its indexes."""
    return SampleSegment(base, [batch(base + 5 * i) for i in range(batches)]).write(directory)


def shipper(log_dir: Path, to: Path, clock: ManualClock, topics: list[str]) -> Shipper:
    config = parse_ship_config(
        {"ship": {"log_dirs": [str(log_dir)], "to": str(to), "topics": topics}}, "ship.toml"
    )
    return Shipper(config, clock=clock)


def shipped(to: Path, name: str) -> list[int]:
    return sorted(int(p.name[:20]) for p in (to / name).glob("*.log"))


def test_rolled_segments_ship_once_checked_and_gaps_are_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    orders, users, damaged = log_dir / "orders-0", log_dir / "users-0", log_dir / "orders-1"
    for d in (orders, users, damaged):
        d.mkdir(parents=True)
    for base in (0, 10, 20):
        segment(orders, base)
        segment(users, base)
        segment(damaged, base)
    (orders / "leader-epoch-checkpoint").write_text("0\n")
    (orders / "00000000000000000020.snapshot").write_bytes(b"x")
    (log_dir / "__cluster_metadata-0").mkdir()
    broken = damaged / segment_name(0)
    data = bytearray(broken.read_bytes())
    data[-3] ^= 0xFF  # the first segment's last batch: its CRC-32C fails
    broken.write_bytes(bytes(data))
    clock = ManualClock(NOW_MS)
    caplog.set_level(logging.WARNING, "segcompact")

    result = shipper(log_dir, to, clock, ["orders"]).poll()
    assert (result.shipped, result.damaged, result.gaps, result.errors) == (3, 1, 0, 0)
    assert shipped(to, "orders-0") == [0, 10]  # 20 is active
    assert shipped(to, "orders-1") == [10]  # 0 damaged, the next one went on
    assert not (to / "users-0").exists()  # not selected
    for base in (0, 10):
        assert (to / "orders-0" / segment_name(base)).read_bytes() == (
            orders / segment_name(base)
        ).read_bytes()
    damage = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
    assert len(damage) == 1 and "\n" not in damage[0]
    assert str(broken) in damage[0] and "CRC" in damage[0]
    assert [
        e.kind for e in manifest_entries(PartitionManifest(LocalFileSystem(), str(to / "orders-1")))
    ] == [
        "damaged",
        "shipped",
    ]

    # The active segment grows: still not shipped.
    active = (orders / segment_name(20)).read_bytes()
    with (orders / segment_name(20)).open("ab") as f:
        f.write(batch(30))
    assert shipper(log_dir, to, clock, ["orders"]).poll().shipped == 0
    assert shipped(to, "orders-0") == [0, 10]

    # It rolls: it ships whole, with the batch appended after an earlier look.
    segment(orders, 35)
    assert shipper(log_dir, to, clock, ["orders"]).poll().shipped == 1
    grown = (to / "orders-0" / segment_name(20)).read_bytes()
    assert grown == (orders / segment_name(20)).read_bytes()
    assert grown == active + batch(30)

    # The cleaner rewrites 0 (a subset of its records): not shipped again.
    first = (to / "orders-0" / segment_name(0)).read_bytes()
    (orders / segment_name(0)).write_bytes(batch(5))
    # Retention deletes 35 before it is shipped; 45 rolls, 55 is active.
    segment(orders, 45)
    segment(orders, 55)
    for suffix in (".log", ".index", ".timeindex"):
        (orders / segment_name(35, suffix)).unlink()
    caplog.clear()
    result = shipper(log_dir, to, clock, ["orders"]).poll()
    assert (result.shipped, result.gaps) == (1, 1)
    assert (to / "orders-0" / segment_name(0)).read_bytes() == first
    assert shipped(to, "orders-0") == [0, 10, 20, 45]
    entries = manifest_entries(PartitionManifest(LocalFileSystem(), str(to / "orders-0")))
    assert [(e.kind, e.start, e.end) for e in entries] == [
        ("shipped", 0, 10),
        ("shipped", 10, 20),
        ("shipped", 20, 35),
        ("gap", 35, 45),
        ("shipped", 45, 55),
    ]
    assert entries[2].size == len(grown) and entries[2].last_offset == 34
    gaps = [r.getMessage() for r in caplog.records if "gap" in r.getMessage()]
    assert gaps == ["orders-0: gap, offsets 35 to 44: deleted before it was shipped"]

    # What status shows for the shipped copy: the gap and the damaged segment, each once; the
    # shipper's own folder is not a "skipped" directory.
    assert not_shipped([str(to)], Storage()) == [
        {
            "path": str(to / "orders-0"),
            "reason": "not shipped (gap): offsets 35 to 44: " + "deleted before it was shipped",
        },
        {
            "path": str(to / "orders-1"),
            "reason": "not shipped (damaged): offsets 0 to 9: "
            + damage[0].split("not shipped: ", 1)[1],
        },
    ]
    assert skipped_directories([str(to)], Storage()) == []

    # A restart: nothing twice, and no temporary file left behind.
    again = shipper(log_dir, to, clock, ["orders"]).poll()
    assert (again.shipped, again.gaps, again.damaged) == (0, 0, 0)
    assert not [p for p in to.rglob("*") if p.name.endswith(".tmp")]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(segcompact.__file__).parents[1])}
    return subprocess.run(
        [sys.executable, "-m", "segcompact.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_ships_once_and_refuses_a_bad_file_in_one_line(tmp_path: Path) -> None:
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    for base in (0, 10):
        segment(log_dir / "orders-0", base)
    config = tmp_path / "ship.toml"
    config.write_text(f'[ship]\nlog_dirs = ["{log_dir}"]\nto = "{to}"\ntopics_regex = "ord.*"\n')
    done = cli("ship", "--config", str(config), "--once", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("shipped 1 segments")
    assert shipped(to, "orders-0") == [0]

    config.write_text(
        f'[ship]\nlog_dirs = ["{tmp_path / "nowhere"}"]\nto = "{to}"\ntopics = ["a"]\n'
    )
    done = cli("ship", "--config", str(config), "--once", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "nowhere does not exist" in done.stderr


def _scrape(port: int) -> dict[str, float]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}  # not serving yet
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_the_continuous_shipper_serves_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    for base in (0, 10):
        segment(log_dir / "orders-0", base)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "ship.toml"
    config.write_text(
        f'[ship]\nlog_dirs = ["{log_dir}"]\nto = "{to}"\ntopics = ["orders"]\n'
        f"poll_interval_ms = 100\n[metrics]\nport = {port}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(segcompact.__file__).parents[1])}
    shipper = subprocess.Popen(
        [sys.executable, "-m", "segcompact.cli", "ship", "--config", str(config)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def shipped_count(n: int) -> bool:
            deadline = time.monotonic() + 60  # a bound, not a pass condition
            while time.monotonic() < deadline and shipper.poll() is None:
                if _scrape(port).get("segcompact_ship_segments_total") == n:
                    return True
                time.sleep(0.05)  # waiting for the next poll
            return False

        assert shipped_count(1)
        assert _scrape(port)["segcompact_ship_lag_seconds"] == 0.0
        segment(log_dir / "orders-0", 20)  # 10 rolls: the next poll ships it
        assert shipped_count(2)
        shipper.send_signal(signal.SIGTERM)
        out, err = shipper.communicate(timeout=60)
    finally:
        if shipper.poll() is None:
            shipper.kill()
    assert shipper.returncode == 0, err
    assert out == ""  # the continuous run logs; it prints no summary
    assert "shipped 1 segments" in err  # the log line of each poll
    leases = sorted((to / ".segcompact-ship").rglob("*.json"))
    assert len(leases) == 1 and json.loads(leases[0].read_text())["released"] is True


def test_replicas_on_two_brokers_are_shipped_by_one_of_them(tmp_path: Path) -> None:
    # Two brokers hold replicas of orders-0, rolled at other offsets; each runs a shipper to
    # the same root. One ships it; the other leaves it, and says so.
    to = tmp_path / "lake"
    brokers = [tmp_path / "broker-1", tmp_path / "broker-2"]
    for i, log_dir in enumerate(brokers):
        (log_dir).mkdir()
        (log_dir / "meta.properties").write_text(f"node.id={i + 1}\ndirectory.id=dir-{i + 1}\n")
    for base in (0, 10, 20):
        segment(brokers[0] / "orders-0", base)
    for base in (0, 15, 20):
        segment(brokers[1] / "orders-0", base, batches=3 if base == 0 else 1)
    segment(brokers[1] / "orders-1", 0)
    segment(brokers[1] / "orders-1", 10)
    clock = ManualClock(NOW_MS)
    first = shipper(brokers[0], to, clock, ["orders"]).poll()
    second = shipper(brokers[1], to, clock, ["orders"]).poll()
    assert (first.partitions, first.elsewhere, first.shipped) == (1, 0, 2)
    assert (second.partitions, second.elsewhere, second.shipped) == (1, 1, 1)  # orders-1 only
    assert "1 more shipped from another log dir" in second.line()
    entries = manifest_entries(PartitionManifest(LocalFileSystem(), str(to / "orders-0")))
    assert [(e.start, e.end) for e in entries] == [(0, 10), (10, 20)]  # broker 1's boundaries
    owner = json.loads((to / "orders-0" / ".ship" / "owner.json").read_text())
    assert owner == {"log_dir": "dir-1"}


def test_a_poll_with_nothing_to_ship_reads_nothing_of_the_target(tmp_path: Path) -> None:
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    for base in (0, 10):
        segment(log_dir / "orders-0", base)
    running = shipper(log_dir, to, ManualClock(NOW_MS), ["orders"])
    assert running.poll().shipped == 1
    to.rename(tmp_path / "moved")  # any read of the target would now fail
    idle = running.poll()
    assert (idle.shipped, idle.errors, idle.partitions) == (0, 0, 1)
    to.mkdir()  # a roll: the next poll writes again, where it left off
    (tmp_path / "moved" / "orders-0").rename(to / "orders-0")
    segment(log_dir / "orders-0", 20)
    assert running.poll().shipped == 1
    assert shipped(to, "orders-0") == [0, 10]


def test_a_topic_created_again_is_an_error_not_silence(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    for base in (0, 10, 20):
        segment(log_dir / "orders-0", base)
    running = shipper(log_dir, to, ManualClock(NOW_MS), ["orders"])
    assert running.poll().shipped == 2
    shutil.rmtree(log_dir / "orders-0")  # deleted, and created again: offsets from 0
    for base in (0, 10):
        segment(log_dir / "orders-0", base)
    caplog.set_level(logging.ERROR, "segcompact")
    result = running.poll()
    assert (result.shipped, result.errors) == (0, 1)
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert line.startswith(
        f"{log_dir / 'orders-0'}: its log now ends at segment 10, below offset 20"
    )
    assert str(to / "orders-0") in line


def test_a_segment_waits_for_the_brokers_high_watermark(tmp_path: Path) -> None:
    # Records above the high watermark may be truncated away by a new leader: a rolled segment
    # ships once the broker's checkpoint says all its records are committed.
    log_dir, to = tmp_path / "kafka", tmp_path / "lake"
    for base in (0, 10, 20):
        segment(log_dir / "orders-0", base)
    checkpoint = log_dir / "replication-offset-checkpoint"
    checkpoint.write_text("0\n1\norders 0 15\n")
    running = shipper(log_dir, to, ManualClock(NOW_MS), ["orders"])
    assert running.poll().shipped == 1
    assert shipped(to, "orders-0") == [0]  # 10 holds offsets up to 19, above 15
    checkpoint.write_text("0\n1\norders 0 20\n")
    assert running.poll().shipped == 1
    assert shipped(to, "orders-0") == [0, 10]
    checkpoint.write_text("0\n")
    result = running.poll()
    assert (result.errors, result.shipped) == (1, 0)  # an unreadable checkpoint is an error
