"""``materialize`` and ``purge`` answer "nothing due" from delta-rs, without a JVM, exactly when
the Spark path would find nothing to do; anything due, or not knowable so, starts Spark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from segcompact import cli
from segcompact.clock import CLOCK_VARIABLE, ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.due import nothing_due
from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.spark.materialize import Materializer
from segcompact.spark.tables import (
    LEDGER_SCHEMA,
    PARTITIONS_SCHEMA,
    STATE_SCHEMA,
    YOUNG_SCHEMA,
    Tables,
)
from tests.support.config import write_config
from tests.support.table_rows import HOUR, NOW, partition_row, tombstone_row, ts

pytestmark = pytest.mark.spark

DAY = 24 * HOUR


def _append(spark: SparkSession, rows: list[dict[str, Any]], schema: StructType, at: str) -> None:
    data = [tuple(r.get(f.name) for f in schema) for r in rows]
    spark.createDataFrame(data, schema).write.format("delta").mode("append").save(at)


def _row(values: tuple[object, ...], schema: StructType) -> dict[str, Any]:
    return dict(zip(schema.fieldNames(), values, strict=True))


def _plans(spark: SparkSession, config: CompactorConfig, **selection: Any) -> set[int]:
    tables = Tables.of(config)
    plans = Materializer(spark, config, tables, ManualClock(NOW)).plans(**selection)
    return {p.partition for p in plans}


def test_nothing_due_is_said_without_spark_and_only_then(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write_config(
        tmp_path, [tmp_path / "segments"], topics={"t": {"gdpr.deletion.sla.ms": DAY}}
    )
    config = load_config(path)
    tables = Tables.of(config)
    tables.ensure(spark)
    _append(
        spark,
        [_row(partition_row(0), PARTITIONS_SCHEMA)],
        PARTITIONS_SCHEMA,
        tables.partitions.name,
    )
    tombstone = _row(tombstone_row(0, NOW + 7 * DAY), STATE_SCHEMA)
    _append(spark, [tombstone], STATE_SCHEMA, tables.state.name)

    assert nothing_due(config, NOW, erasure=True) and _plans(spark, config) == set()
    # The tombstone's horizon passed: it leaves the state, by Spark.
    assert not nothing_due(config, NOW + 8 * DAY, erasure=False)

    def no_spark(**_: object) -> None:
        raise AssertionError("Spark started")

    monkeypatch.setattr("segcompact.spark.session.get_spark", no_spark)
    monkeypatch.setenv(SECRET_VARIABLE, "a secret of 16 bytes or more")
    monkeypatch.setenv(CLOCK_VARIABLE, str(NOW))
    for command in ("materialize", "purge"):
        assert cli.main([command, "--config", str(path)]) == 0
        assert capsys.readouterr().out == "nothing due\n"

    # An erasure mark: due a quarter of the SLA after it, for purge only.
    marked = {**_row(partition_row(1), PARTITIONS_SCHEMA), "erasure_from": ts(NOW - HOUR)}
    _append(spark, [marked], PARTITIONS_SCHEMA, tables.partitions.name)
    assert nothing_due(config, NOW, erasure=True)
    assert not nothing_due(config, NOW + 6 * HOUR, erasure=True)
    assert nothing_due(config, NOW + 6 * HOUR, erasure=False)

    # An open erasure round: purge advances it.
    round_row = {
        "kind": "round", "topic": "t", "partition": 1, "appended_at": ts(NOW - HOUR),
        "deadline": ts(NOW + DAY), "round": 1, "status": "pending", "updated_at": ts(NOW),
    }  # fmt: skip
    _append(spark, [round_row], LEDGER_SCHEMA, tables.ledger.name)
    assert not nothing_due(config, NOW, erasure=True)
    assert nothing_due(config, NOW, erasure=False)

    # A partition due (dirty ratio 1): materialize, unless another one is asked for; the
    # materialiser's own plans agree.
    dirty = _row(partition_row(2, dirty=100, clean=0), PARTITIONS_SCHEMA)
    _append(spark, [dirty], PARTITIONS_SCHEMA, tables.partitions.name)
    assert not nothing_due(config, NOW, erasure=False)
    assert nothing_due(config, NOW, erasure=False, topic="t", partition=0)
    assert _plans(spark, config) == {2} and _plans(spark, config, topic="t", partition=0) == set()

    # A young record old enough to graduate (the topic has no lag): Spark decides which.
    _append(spark, [{**tombstone, "segment_base": 0}], YOUNG_SCHEMA, tables.young.name)
    assert not nothing_due(config, NOW, erasure=False, topic="t", partition=0)


def test_tables_not_created_yet_are_left_to_spark(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, [tmp_path / "segments"]))
    assert not nothing_due(config, NOW, erasure=False)
