"""The plain pattern: what users write today to keep a compacted topic's state in Delta.

``spark.read.format("binaryFile")`` over the ``.log`` files, ``mapInArrow`` decoding each file
with kafka-python's ``MemoryRecords`` into rows (topic, partition, key, value, offset,
timestamp, timestampType, headers), null keys dropped, the highest offset per (topic,
partition, key) kept with ``max_by`` (as segcompact does), and ONE Delta MERGE into a fresh
table: update when the source offset is higher, insert when not matched; tombstones stay as
rows with a ``tombstone`` flag, as segcompact keeps them until their delete horizon. As users
write it, it does not check CRCs (segcompact does).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from tests.support.keyed_log import Log

HEADERS = T.ArrayType(
    T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
)
DECODED = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("key", T.BinaryType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.LongType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField("headers", HEADERS),
    ]
)
PLAIN_STATE = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("key", T.BinaryType()),
        T.StructField("offset", T.LongType()),
        T.StructField("timestamp", T.TimestampType()),
        T.StructField("timestampType", T.IntegerType()),
        T.StructField("value", T.BinaryType()),
        T.StructField("headers", HEADERS),
        T.StructField("tombstone", T.BooleanType()),
    ]
)
_DECODED_ARROW = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("timestampType", pa.int32()),
        (
            "headers",
            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
        ),
    ]
)
_CHUNK_ROWS = 1 << 16


def decode_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: binaryFile rows (path, content) to one row per record."""
    from kafka.record.memory_records import MemoryRecords

    def chunk(topic: str, partition: int, cols: list[list[Any]]) -> pa.RecordBatch:
        n = len(cols[0])
        return pa.RecordBatch.from_arrays(
            [
                pa.array([topic] * n, pa.string()),
                pa.array([partition] * n, pa.int32()),
                *(pa.array(c, f.type) for c, f in zip(cols, list(_DECODED_ARROW)[2:], strict=True)),
            ],
            schema=_DECODED_ARROW,
        )

    for batch in batches:
        paths, contents = batch.column("path"), batch.column("content")
        for i in range(batch.num_rows):
            folder = paths[i].as_py().rstrip("/").rsplit("/", 2)[-2]
            topic, _, partition_text = folder.rpartition("-")
            partition = int(partition_text)
            records = MemoryRecords(contents[i].as_py())
            cols: list[list[Any]] = [[], [], [], [], [], []]
            key, value, offset, timestamp, ts_type, headers = cols
            while (b := records.next_batch()) is not None:
                if getattr(b, "is_control_batch", False):
                    continue
                kind = b.timestamp_type
                for r in b:
                    key.append(r.key)
                    value.append(r.value)
                    offset.append(r.offset)
                    timestamp.append(r.timestamp)
                    ts_type.append(kind)
                    headers.append(r.headers)
                if len(key) >= _CHUNK_ROWS:
                    yield chunk(topic, partition, cols)
                    cols = [[], [], [], [], [], []]
                    key, value, offset, timestamp, ts_type, headers = cols
            if key:
                yield chunk(topic, partition, cols)


def decoded(spark: SparkSession, log: Log) -> DataFrame:
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.log")
        .option("recursiveFileLookup", "true")
        .load(log.root)
    )
    return files.select("path", "content").mapInArrow(decode_files, DECODED)


def write_state(spark: SparkSession, log: Log, path: Path) -> Path:
    """The state table at ``path``, created and filled by one MERGE; returns ``path``."""
    target = DeltaTable.create(spark).location(str(path)).addColumns(PLAIN_STATE).execute()
    records = decoded(spark, log).where(F.col("key").isNotNull())
    rest = [c for c in records.columns if c not in ("topic", "partition", "key")]
    latest = (
        records.groupBy("topic", "partition", "key")
        .agg(F.max_by(F.struct(*rest), F.col("offset")).alias("r"))
        .select("topic", "partition", "key", "r.*")
    )
    source = latest.select(
        "topic",
        "partition",
        "key",
        "offset",
        F.timestamp_millis("timestamp").alias("timestamp"),
        "timestampType",
        "value",
        "headers",
        F.col("value").isNull().alias("tombstone"),
    )
    (
        target.alias("t")
        .merge(
            source.alias("s"),
            "t.topic = s.topic AND t.partition = s.partition AND t.key = s.key",
        )
        .whenMatchedUpdateAll(condition="s.offset > t.offset")
        .whenNotMatchedInsertAll()
        .execute()
    )
    return path
