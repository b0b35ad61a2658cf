"""The shipper's metrics: what it shipped, and the lag of what waits, absent until looked at."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prometheus_client import generate_latest

from segcompact.clock import ManualClock
from segcompact.config.ship import parse_ship_config
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.samples import SampleSegment
from segcompact.ship.metrics import ShipMetrics
from segcompact.ship.shipper import Shipper


def _segment(directory: Path, base: int) -> Path:
    return SampleSegment(base, [build_batch([Record(base, 0, b"k", b"v")])]).write(directory)


def _scrape(metrics: ShipMetrics) -> dict[str, float]:
    out = {}
    for line in generate_latest(metrics.registry).decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def _shipper(log_dir: Path, to: Path, clock: ManualClock, metrics: ShipMetrics) -> Shipper:
    config = parse_ship_config(
        {"ship": {"log_dirs": [str(log_dir)], "to": str(to), "topics": ["t"]}}, "ship.toml"
    )
    return Shipper(config, clock=clock, metrics=metrics)


def test_shipped_and_waiting_segments(tmp_path: Path) -> None:
    log_dir = tmp_path / "kafka"
    first = _segment(log_dir / "t-0", 0)
    second = _segment(log_dir / "t-0", 1)
    _segment(log_dir / "t-0", 2)
    os.utime(first, ns=(0, 10_000 * 1_000_000))  # rolled at 10 s past the epoch
    os.utime(second, ns=(0, 12_000 * 1_000_000))
    taken = tmp_path / "lake" / "t-0" / "00000000000000000000.log"
    taken.parent.mkdir(parents=True)
    taken.write_bytes(b"something else")  # not the shipper's to replace: the upload fails
    metrics = ShipMetrics()
    clock = ManualClock(25_000)
    assert "segcompact_ship_lag_seconds" not in _scrape(metrics)  # not looked yet

    result = _shipper(log_dir, tmp_path / "lake", clock, metrics).poll()
    assert result.errors == 1 and result.shipped == 0
    seen = _scrape(metrics)
    assert seen["segcompact_ship_lag_seconds"] == 15.0  # the oldest waiting: 25 s - 10 s
    assert seen["segcompact_ship_lag_segments"] == 2
    assert seen["segcompact_ship_lag_bytes"] == first.stat().st_size + second.stat().st_size
    assert seen["segcompact_ship_errors_total"] == 1

    taken.unlink()
    result = _shipper(log_dir, tmp_path / "lake", clock, metrics).poll()
    seen = _scrape(metrics)
    assert result.shipped == 2
    assert seen["segcompact_ship_segments_total"] == 2
    assert seen["segcompact_ship_bytes_total"] == first.stat().st_size + second.stat().st_size
    assert seen["segcompact_ship_lag_seconds"] == 0.0
    assert seen["segcompact_ship_lag_segments"] == 0


def test_an_unlisted_log_dir_makes_the_lag_unknown(tmp_path: Path) -> None:
    metrics = ShipMetrics()
    _segment(tmp_path / "kafka" / "t-0", 0)
    shipper = _shipper(tmp_path / "kafka", tmp_path / "lake", ManualClock(0), metrics)
    shipper.poll()
    assert "segcompact_ship_lag_seconds" in _scrape(metrics)
    shutil.rmtree(tmp_path / "kafka")  # the log dir's disk is gone
    assert shipper.poll().errors == 1
    assert "segcompact_ship_lag_seconds" not in _scrape(metrics)


def test_a_target_that_cannot_be_read_makes_the_lag_unknown(tmp_path: Path) -> None:
    metrics = ShipMetrics()
    _segment(tmp_path / "kafka" / "t-0", 0)
    _segment(tmp_path / "kafka" / "t-0", 1)
    (tmp_path / "file").write_bytes(b"")
    shipper = _shipper(tmp_path / "kafka", tmp_path / "file" / "lake", ManualClock(0), metrics)
    assert shipper.poll().errors == 1
    assert "segcompact_ship_lag_seconds" not in _scrape(metrics)


def test_a_stop_leaves_what_was_not_started_for_the_next_start(tmp_path: Path) -> None:
    metrics = ShipMetrics()
    for base in (0, 1, 2):
        _segment(tmp_path / "kafka" / "t-0", base)
    shipper = _shipper(tmp_path / "kafka", tmp_path / "lake", ManualClock(0), metrics)
    shipper.stop.set()  # SIGTERM
    result = shipper.poll()
    assert (result.shipped, result.errors) == (0, 0)
    assert _scrape(metrics)["segcompact_ship_lag_segments"] == 2
    assert not (tmp_path / "lake" / "t-0" / "00000000000000000000.log").exists()
