"""A micro-batch decodes each of its segments once, whatever the merge takes from it: the
winners, the young rows of a lagged topic and the transactional records and markers all come
from one held scan (``spark/scan.py``). Decodes are counted by the source itself, in its Python
workers (``source.DECODES_VARIABLE``)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from segcompact.clock import CLOCK_VARIABLE
from segcompact.config import load_config
from segcompact.spark.source import DECODES_VARIABLE
from tests.e2e.harness import (
    delta_rows,
    model_of,
    model_state,
    native_state,
    run_cli,
    without_times,
    write_config,
    write_log,
)

NOW_MS = 1_040_000  # generated records are stamped 1_000_000 to 1_050_000
LAG_MS = 30_000  # so some segments hold young records, some not


@pytest.mark.spark
def test_a_lagged_transactional_batch_decodes_each_segment_once(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    log = write_log(tmp_path / "in", 41, topics=["orders"], partitions=1)
    config_path = write_config(
        tmp_path,
        [log.root],
        rolled_only=False,
        topics={"orders": {"min.compaction.lag.ms": str(LAG_MS)}},
    )
    decodes = tmp_path / "decodes"
    decodes.mkdir()
    result = run_cli(
        "run",
        "--config",
        config_path,
        "--once",
        cwd=tmp_path,
        spark_conf_dir=spark_conf_dir,
        env={DECODES_VARIABLE: str(decodes), CLOCK_VARIABLE: str(NOW_MS)},
    )
    assert result.returncode == 0, result.stderr
    records = log.records(log.segments)
    # The batch holds what the merge reads three ways: keyed records of a lagged topic,
    # transactional records, and their markers.
    assert any(r.is_control for r in records)
    assert any(r.is_transactional and not r.is_control for r in records)
    bases = [int(p.name.removesuffix(".log")) for p in log.segments[("orders", 0)]]
    assert len(bases) >= 2
    counted = Counter(name.rsplit(".", 1)[0] for name in os.listdir(decodes))
    assert counted == {f"orders-0-{base}": 1 for base in bases}

    # And the tables are the model's.
    config = load_config(config_path)
    model = model_of(config, records, now_ms=NOW_MS)
    assert any(model.young.values()), "some records should be too young to compact"
    assert without_times(native_state(config)) == without_times(model_state(model))
    young = delta_rows(config, config.state.young_table)
    assert sorted(zip(young["topic"].to_pylist(), young["offset"].to_pylist(), strict=True)) == (
        sorted((tp[0], offset) for tp, offsets in model.young.items() for offset in offsets)
    )
