"""A short run of the chaos harness (``make chaos`` runs 50 kill points over every step): two
kills, one in the continuous run and one in ``materialize --force``, on three of a job's
steps, then every table and the output as an uninterrupted run left them. The log is read in
one micro-batch, not one per segment; the steps left out (graduation, ``delete-records``,
``purge``) are ``make chaos``'s. Eight commands in all, against sixteen for four kills over
the six steps (345 s in a whole ``make test``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.harness import chaos

pytestmark = pytest.mark.spark

SMOKE_STEPS = ("run --once (first half)", "run (second half)", "materialize --force")


def test_a_few_kills_change_nothing(tmp_path: Path, spark_conf_dir: Path) -> None:
    points, found = chaos(
        tmp_path,
        2,
        7,
        records=40,
        spark_conf=spark_conf_dir,
        segments_per_batch=100,
        only=SMOKE_STEPS,
    )
    assert found == [], points
    assert points, "no step was killed: the delays all fell past the steps' ends"
    assert {p.split(" at ")[0] for p in points} <= set(SMOKE_STEPS), points
