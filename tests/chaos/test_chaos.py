"""A short run of the chaos harness (``make chaos`` runs 50 kill points): a few kill -9s across
a job's steps, then every table and the output as an uninterrupted run left them. Four kills
spread over six steps leave none to the two runs that read the log (a step's share is rounded
down), so here they read it in one micro-batch, not one per segment (one instead of five in each
job: 385 s to 337 s in all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.harness import chaos

pytestmark = pytest.mark.spark


def test_a_few_kills_change_nothing(tmp_path: Path, spark_conf_dir: Path) -> None:
    points, found = chaos(
        tmp_path, 4, 7, records=40, spark_conf=spark_conf_dir, segments_per_batch=100
    )
    assert found == [], points
    assert points, "no step was killed: the delays all fell past the steps' ends"
