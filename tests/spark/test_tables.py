"""segcompact's Delta tables: created once, and an incompatible existing table is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from segcompact.errors import ConfigError
from segcompact.spark.tables import PENDING_SCHEMA, Table, Tables

pytestmark = pytest.mark.spark


def test_every_table_is_created_once_and_reopened(spark: SparkSession, tmp_path: Path) -> None:
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    tables.ensure(spark)
    tables.ensure(spark)  # again: the same tables, no error
    for t in (tables.state, tables.partitions, tables.pending, tables.young):
        assert t.read(spark).schema.fieldNames() == t.schema.fieldNames()


def test_a_table_without_segcompacts_columns_is_refused_in_one_line(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "pending")
    older = T.StructType([f for f in PENDING_SCHEMA if f.name != "segment_base"])
    Table(path, older).ensure(spark)
    with pytest.raises(ConfigError) as e:
        Table(path, PENDING_SCHEMA).ensure(spark)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ") and "segment_base bigint" in message
