"""A MERGE of a few rows the driver holds into a table, as SQL that Spark and delta-rs
(DataFusion) both evaluate alike.

The partitions table takes a handful of rows per batch: a batch's numbers, a materialisation's
record, a round's marks. A Spark MERGE of them costs seconds of JVM CPU (planning, a Spark job
for the target's files, the commit's snapshot); delta-rs does the same in tens of milliseconds.
One :class:`RowsMerge` says what is merged, once; the table chooses the engine
(``segcompact.spark.tables.Table.merge_rows``).

The SQL keeps to what both dialects mean the same by: column references ``t.<name>`` (the
target) and ``s.<name>`` (the rows), arithmetic, comparisons, ``IS NULL``, ``AND``/``OR``,
``coalesce``, ``greatest`` and ``least`` (both skip nulls), ``CASE WHEN``, and the literals
``NULL`` and integers. Times are computed by the caller and passed as timestamp columns of the
rows, never as SQL functions of numbers (``timestamp_millis`` is Spark's alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class RowsMerge:
    """``MERGE INTO target t USING rows s ON <on> WHEN MATCHED [AND <when>] THEN UPDATE SET
    <update> [WHEN NOT MATCHED THEN INSERT <insert>]``. ``insert`` names every column of the
    table (empty: unmatched rows are dropped)."""

    on: str
    update: Mapping[str, str]
    when: str | None = None
    insert: Mapping[str, str] = field(default_factory=dict)


# How the partitions table's rows are matched: by Kafka partition.
BY_PARTITION = "t.topic = s.topic AND t.partition = s.partition"
