"""DataFrames of a few rows the driver holds (a batch's numbers, log starts, a round's marks).

``spark.createDataFrame`` of a Python list parallelises the pickled rows, and every job that
reads them unpickles them in Python workers: a task per default-parallelism slot, under a
Python daemon of their own (the pickled-RDD path keeps another worker environment than the
SQL one): a daemon and two workers, 1.4 CPU s of a `run --once` of 268 MB. Built as Arrow
instead, the rows stay in the plan as a local relation: no worker, no task.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema


def local_frame(
    spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType | str
) -> DataFrame:
    """``rows`` (tuples in the schema's column order) as a DataFrame of ``schema`` (a struct or
    DDL), as :func:`local_rows` builds them."""
    struct = _struct(schema)
    return spark.createDataFrame(local_rows(rows, struct), struct)


def local_rows(rows: Sequence[Sequence[Any]], schema: T.StructType | str) -> pa.Table:
    """``rows`` (tuples in the schema's column order) as an Arrow table of ``schema`` (a struct
    or DDL; timestamps in UTC). A naive ``datetime`` is local time, as ``createDataFrame`` and
    ``collect`` take it; a timestamp column takes nothing else (Arrow would read a number as
    microseconds)."""
    struct = _struct(schema)
    arrow = to_arrow_schema(struct, timezone="UTC")
    columns: list[list[Any]] = [[] for _ in struct.fields]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row of {len(row)} values for {len(columns)} columns")
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    arrays = [
        pa.array(_aware(values) if isinstance(f.dataType, T.TimestampType) else values, field.type)
        for values, f, field in zip(columns, struct.fields, arrow, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=arrow)


def _struct(schema: T.StructType | str) -> T.StructType:
    struct = schema if isinstance(schema, T.StructType) else T.StructType.fromDDL(schema)
    if not isinstance(struct, T.StructType):
        raise ValueError(f"not a row's schema: {schema}")
    return struct


def _aware(values: list[Any]) -> list[Any]:
    for v in values:
        if v is not None and not isinstance(v, dt.datetime):
            raise TypeError(f"a timestamp column takes a datetime, not {type(v).__name__} {v!r}")
    return [v.astimezone() if v is not None and v.tzinfo is None else v for v in values]
