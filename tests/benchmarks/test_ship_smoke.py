"""The shipping benchmark runs once on a tiny log: every figure is there; timings are not
checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks import ship

pytestmark = pytest.mark.benchmark


def test_ship_benchmark_smoke(tmp_path: Path) -> None:
    out = ship.main(
        [
            *("--partitions", "2", "--segments", "1", "--segment-mib", "2"),
            *("--idle-partitions", "3", "--idle-polls", "2", "--idle-s", "0"),
            *("--workdir", str(tmp_path)),
        ]
    )
    assert out["segments"] == 2 and out["bytes"] > 4_000_000
    for way in ("ship", "plain"):
        assert out[way]["wall_s"] > 0 and out[way]["mb_per_s"] > 0
    assert out["ratio"] > 0
    idle = out["idle"]
    assert (idle["partitions"], idle["polls"], idle["poll_interval_s"]) == (3, 2, 10)
    assert idle["cpu_ms_per_partition_poll"] >= 0 and idle["core_percent"] >= 0
