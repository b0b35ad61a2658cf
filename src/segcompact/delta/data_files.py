"""A Delta data file's statistics, as Spark's Delta writes them into the file's ``add`` action.

Delta skips files by these (``numRecords``, per column ``minValues``, ``maxValues`` and
``nullCount``), and segcompact reads them too (``NativeReader.may_hold_until``): a file written
outside Spark must carry the same. Spark's Delta gives every column a null count (a list or a
binary one included), and a minimum and maximum to numbers, strings and times only, none to a
column whose values are all null. Times are in milliseconds, rounded out (the minimum down, the
maximum up), so that the bounds hold. ``tightBounds``: the bounds are those of the file's rows,
as a table with deletion vectors states them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_STRING_PREFIX = 32  # Spark's Delta keeps the first 32 characters of a string's bounds


class Statistics:
    """A data file's statistics (its columns but the partition's), gathered as its rows are
    written a batch at a time; :meth:`to_json` is its ``stats``."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.records = 0
        self._nulls = dict.fromkeys(schema.names, 0)
        # Per column, as Python values (times as their integer counts).
        self._least: dict[str, Any] = {}
        self._most: dict[str, Any] = {}

    def add(self, rows: pa.Table | pa.RecordBatch) -> None:
        self.records += rows.num_rows
        for field in self.schema:
            column = rows.column(field.name)
            self._nulls[field.name] += column.null_count
            if column.null_count == len(column) or not _bounded(field.type):
                continue
            if pa.types.is_timestamp(field.type):
                column = column.cast(pa.int64())
            least, most = (bound.as_py() for bound in pc.min_max(column).values())
            if field.name in self._least:
                least = min(least, self._least[field.name])
                most = max(most, self._most[field.name])
            self._least[field.name], self._most[field.name] = least, most

    def to_json(self) -> str:
        kinds = {f.name: f.type for f in self.schema}
        maximum = {n: _bound(v, kinds[n], up=True) for n, v in self._most.items()}
        return json.dumps(
            {
                "numRecords": self.records,
                "minValues": {n: _bound(v, kinds[n], up=False) for n, v in self._least.items()},
                "maxValues": {n: v for n, v in maximum.items() if v is not None},
                "nullCount": self._nulls,
                "tightBounds": True,
            },
            separators=(",", ":"),
        )


def _bounded(kind: pa.DataType) -> bool:
    checks = (pa.types.is_integer, pa.types.is_floating, pa.types.is_string)
    return any(bool(check(kind)) for check in (*checks, pa.types.is_timestamp, pa.types.is_date))


def _bound(value: Any, kind: pa.DataType, *, up: bool) -> Any:
    """A bound in the log's JSON form (None: no maximum, for a string cut short)."""
    if pa.types.is_timestamp(kind):
        per_ms = _PER_MS[kind.unit]
        count = value * (1000 if kind.unit == "s" else 1)
        ms = -(-count // per_ms) if up else count // per_ms
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if pa.types.is_date(kind):
        return value.isoformat()
    if pa.types.is_string(kind):
        # A cut maximum is no longer one: Spark's Delta then gives no maximum; a cut minimum is.
        return value[:_STRING_PREFIX] if not up or len(value) <= _STRING_PREFIX else None
    return value


_PER_MS = {"s": 1, "ms": 1, "us": 1000, "ns": 1_000_000}  # seconds are made milliseconds first


@dataclass(frozen=True, slots=True)
class DataFile:
    """A data file written into a table, as its ``add`` action names it: the path relative to
    the table, its size, its partition's values, when it was written and its statistics."""

    path: str
    size: int
    partition_values: Mapping[str, str | None]
    modification_time: int
    stats: str
