"""The deletion ledger table: delete rows appended as tombstones merge, rows read and updated.

Keys never reach the ledger, a Delta predicate or a commit's info: they are hashed on the
executors (``mapInArrow``) under the ledger's secret, and every MERGE here matches on columns,
never on literals. Times are read and written as epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from segcompact.config import TopicConfig
from segcompact.erasure.keyhash import key_hash
from segcompact.erasure.ledger_reads import DELETE
from segcompact.erasure.schedule import Status
from segcompact.spark.frames import local_frame
from segcompact.spark.rules import per_topic
from segcompact.spark.tables import LEDGER_SCHEMA, Table, timestamp

TIME_COLUMNS = tuple(f.name for f in LEDGER_SCHEMA if isinstance(f.dataType, T.TimestampType))
_HASHED = T.StructType(
    [
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("key_hash", T.StringType(), False),
        T.StructField("offset", T.LongType(), False),
        T.StructField("appended_ms", T.LongType(), False),
        T.StructField("horizon_ms", T.LongType(), True),
    ]
)


def sla_topics(topics: Mapping[str, TopicConfig]) -> dict[str, TopicConfig]:
    return {t: c for t, c in topics.items() if c.gdpr_deletion_sla_ms is not None}


def record_deletes(
    spark: SparkSession,
    ledger: Table,
    tombstones: DataFrame,
    topics: Mapping[str, TopicConfig],
    secret: bytes,
    *,
    state_version: int,
    now: int,
    batch: tuple[str, int] | None,
) -> None:
    """Add a pending row per tombstone just merged into the state (``tombstones``: topic,
    partition, key, offset, timestamp, delete_horizon) of a topic with an SLA, once.

    A micro-batch's rows are appended under its idempotent-write pair ``batch`` (app id, batch
    id): a replay adds none twice, and the ledger is not read. Graduated rows (``batch`` None)
    go through an insert-only MERGE on the tombstone: a graduation a crash cut short is redone
    with a later clock, which may graduate more rows than the first attempt wrote, so no pair
    names what it covers. ``now`` is when segcompact first saw a batch's records; graduated
    ones have no ``seen`` time."""

    hashed_schema = to_arrow_schema(_HASHED)

    def hash_keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            hashes = [
                key_hash(secret, t, p, k)
                for t, p, k in zip(
                    b.column("topic").to_pylist(),
                    b.column("partition").to_pylist(),
                    b.column("key").to_pylist(),
                    strict=True,
                )
            ]
            yield pa.RecordBatch.from_arrays(
                [
                    b.column("topic"),
                    b.column("partition"),
                    pa.array(hashes, pa.string()),
                    b.column("offset"),
                    b.column("appended_ms"),
                    b.column("horizon_ms"),
                ],
                schema=hashed_schema,
            )

    # A: the earlier of the record's timestamp and now (a producer clock ahead buys no time).
    hashed = tombstones.select(
        "topic",
        "partition",
        "key",
        "offset",
        F.least(F.unix_millis("timestamp"), F.lit(now)).alias("appended_ms"),
        F.unix_millis("delete_horizon").alias("horizon_ms"),
    ).mapInArrow(hash_keys, _HASHED)
    sla = per_topic(F.col("topic"), topics, lambda c: F.lit(c.gdpr_deletion_sla_ms))
    source = hashed.select(
        F.lit(DELETE).alias("kind"),
        "topic",
        "partition",
        "key_hash",
        "offset",
        F.timestamp_millis("appended_ms").alias("appended_at"),
        F.timestamp_millis(F.col("appended_ms") + sla).alias("deadline"),
        F.timestamp_millis("horizon_ms").alias("horizon"),
        (timestamp(now) if batch else F.lit(None).cast("timestamp")).alias("seen_at"),
        timestamp(now).alias("merged_at"),
        F.lit(state_version).cast("long").alias("state_version"),
        F.lit(Status.PENDING).alias("status"),
        timestamp(now).alias("updated_at"),
    )
    rows = source.select(
        *[
            F.col(f.name)
            if f.name in source.columns
            else F.lit(None).cast(f.dataType).alias(f.name)
            for f in LEDGER_SCHEMA
        ]
    )
    if batch is not None:
        ledger.append(rows, app_id=batch[0], version=batch[1])
        return
    (
        ledger.delta(spark)
        .alias("t")
        .merge(
            rows.alias("s"),
            "t.kind = s.kind AND t.topic = s.topic AND t.partition = s.partition "
            "AND t.key_hash = s.key_hash AND t.offset = s.offset",
        )
        .whenNotMatchedInsertAll()
        .execute()
    )


def rows_frame(spark: SparkSession, rows: Sequence[Mapping[str, Any]]) -> DataFrame:
    """Dicts shaped like :func:`read_rows`'s as a DataFrame of the ledger's schema."""
    as_longs = T.StructType(
        [
            T.StructField(f.name, T.LongType(), True) if f.name in TIME_COLUMNS else f
            for f in LEDGER_SCHEMA
        ]
    )
    df = local_frame(spark, [tuple(r.get(f.name) for f in LEDGER_SCHEMA) for r in rows], as_longs)
    return df.select(
        *[
            F.timestamp_millis(F.col(f.name)).alias(f.name)
            if f.name in TIME_COLUMNS
            else F.col(f.name)
            for f in LEDGER_SCHEMA
        ]
    )


def upsert(spark: SparkSession, ledger: Table, source: DataFrame) -> None:
    """Write whole rows, matched on what identifies them: a delete by its tombstone, a round's
    row by its round and partition."""
    (
        ledger.delta(spark)
        .alias("t")
        .merge(
            source.alias("s"),
            "t.kind = s.kind AND t.topic = s.topic AND t.partition = s.partition AND ("
            "(t.kind = 'delete' AND t.key_hash = s.key_hash AND t.offset = s.offset) OR "
            "(t.kind = 'round' AND t.round = s.round))",
        )
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
