"""How often the job's metrics read the tables again: at most once per ``REFRESH_S``, and a
refresh that came too soon is owed, not dropped."""

from __future__ import annotations

from typing import Any

import pytest

from segcompact import metrics as metrics_module
from segcompact.metrics import REFRESH_S, JobMetrics


def test_a_refresh_too_soon_after_the_last_leaves_the_figures_stale_until_one_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(metrics_module.time, "monotonic", lambda: now[0])
    metrics = JobMetrics()
    reads: list[int] = []
    monkeypatch.setattr(metrics, "_read", lambda config, now_ms, spark: reads.append(now_ms))
    config: Any = None

    metrics.refresh(config, 1, lambda views: None)  # the job's start
    assert reads == [1] and not metrics.stale
    now[0] += 3
    metrics.refresh(config, 2, lambda views: None)  # a batch, 3 s later: skipped, owed
    assert reads == [1] and metrics.stale
    now[0] += REFRESH_S
    metrics.refresh(config, 3, lambda views: None)  # the idle loop's call
    assert reads == [1, 3] and not metrics.stale
    metrics.refresh(config, 4, lambda views: None, force=True)
    assert reads == [1, 3, 4]
