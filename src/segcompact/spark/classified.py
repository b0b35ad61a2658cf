"""Records read back from a table, classified in Python workers by ``compaction.rules`` (the
rules' one home; Spark holds no copy of them): how the pending table of an earlier version,
written before the source's task classified records, gains the rules' columns."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import StructField, StructType

from segcompact.compaction.rules import RULE_FIELDS, Rankings, classify
from segcompact.format.arrow import SCHEMA

# What ``classify`` reads of a record, typed as the decoder types it.
_READ = ("value", "headers", "attributes", "is_control")


def classified(rows: DataFrame, rankings: Rankings) -> DataFrame:
    """``rows`` (records with ``topic`` and the columns ``classify`` reads) with the rules'
    columns (:data:`~segcompact.compaction.rules.RULE_FIELDS`) computed under each one's
    topic's rules, in place of any they had."""
    rows = rows.drop(*(f.name for f in RULE_FIELDS))
    added = [StructField(f.name, from_arrow_type(f.type), True) for f in RULE_FIELDS]
    schema = StructType([*rows.schema.fields, *added])
    return rows.mapInArrow(functools.partial(_classify, rankings), schema)


def _classify(rankings: Rankings, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        topics = batch.column("topic")
        for topic in pc.unique(topics).to_pylist():
            part = batch.filter(pc.equal(topics, topic))
            read = pa.RecordBatch.from_arrays(
                [part.column(n).cast(SCHEMA.field(n).type) for n in _READ], names=list(_READ)
            )
            rules = classify(read, rankings.for_topic(topic)).columns[-len(RULE_FIELDS) :]
            for f, column in zip(RULE_FIELDS, rules, strict=True):
                part = part.append_column(f, column)
            yield part
