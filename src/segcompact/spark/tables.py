"""The Delta tables segcompact owns: their schemas, and opening or creating them by path or name.

A table is named by a path (local, ``s3a://``, ``abfss://``, ``dbfs:/``…) or, on Databricks
and other catalogs, by a catalog name such as ``main.segcompact.state``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.compaction.rules import Rankings
from segcompact.config import CompactorConfig, is_table_name
from segcompact.config.sla import DAY_MS, retention_ms
from segcompact.delta.data_files import DataFile
from segcompact.delta.merge_sql import RowsMerge
from segcompact.delta.native import NativeReader
from segcompact.delta.reader import TableReader
from segcompact.erasure.schedule import EXPIRED, STAGES
from segcompact.errors import ConfigError
from segcompact.spark import table_reader
from segcompact.spark.classified import classified
from segcompact.spark.frames import local_frame
from segcompact.spark.table_reader import delta_table, qualify
from segcompact.storage import Storage

HEADERS = T.ArrayType(
    T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
)


def _field(name: str, kind: T.DataType, nullable: bool = False) -> T.StructField:
    return T.StructField(name, kind, nullable)


# Where a record is, and the record as Spark's Kafka source types it: shared by every table.
_PARTITION = [_field("topic", T.StringType()), _field("partition", T.IntegerType())]
_OFFSET_AND_TIME = [
    _field("offset", T.LongType()),
    _field("timestamp", T.TimestampType()),
    _field("timestampType", T.IntegerType()),
]

STATE_SCHEMA = T.StructType(
    [
        *_PARTITION,
        _field("key", T.BinaryType()),
        *_OFFSET_AND_TIME,
        _field("value", T.BinaryType(), True),
        _field("headers", HEADERS, True),
        _field("order_value", T.LongType(), True),
        _field("tombstone", T.BooleanType()),
        _field("delete_horizon", T.TimestampType(), True),
        _field("cleaned_at", T.TimestampType()),
    ]
)

PARTITIONS_SCHEMA = T.StructType(
    [
        *_PARTITION,
        _field("log_start_offset", T.LongType()),
        _field("log_end_offset", T.LongType()),
        # Earliest record timestamp not yet materialised (KIP-354's clock starts here).
        _field("first_dirty_timestamp", T.TimestampType(), True),
        _field("first_dirty_appended_at", T.TimestampType(), True),
        _field("dirty_bytes", T.LongType()),
        _field("clean_bytes", T.LongType()),
        _field("segments", T.LongType()),
        _field("records", T.LongType()),  # data records read (markers excluded)
        _field("keyless_records", T.LongType()),
        _field("bad_version_headers", T.LongType()),
        _field("compression", T.IntegerType(), True),  # codec of the newest input batch
        _field("last_materialized_at", T.TimestampType(), True),
        _field("materialized_version", T.LongType(), True),
        _field("materialized_log_start", T.LongType(), True),
        # Earliest delete horizon among the tombstones in the published output.
        _field("output_next_horizon", T.TimestampType(), True),
        _field("uncleanable_reason", T.StringType(), True),
        _field("updated_at", T.TimestampType()),
        # Earliest append time of a record merged into the state since the last erasure round
        # took the partition (topics with gdpr.deletion.sla.ms only): the deletion SLA's clock.
        _field("erasure_from", T.TimestampType(), True),
    ]
)

# A record as the state and the young table hold it, and as the materialiser writes it.
RECORD_FIELDS = [f for f in STATE_SCHEMA if f.name != "cleaned_at"]

# Records younger than min.compaction.lag.ms, and every later record of their partition, kept
# raw (not compacted) until the first young segment ages (Kafka's first uncleanable offset).
YOUNG_SCHEMA = T.StructType([*RECORD_FIELDS, T.StructField("segment_base", T.LongType(), False)])

# Undecided transactional records, and the markers seen (is_control), until decided.
PENDING_SCHEMA = T.StructType(
    [
        *_PARTITION,
        _field("producer_id", T.LongType()),
        _field("is_control", T.BooleanType()),
        _field("commit", T.BooleanType(), True),
        _field("key", T.BinaryType(), True),
        _field("value", T.BinaryType(), True),
        *_OFFSET_AND_TIME,
        _field("headers", HEADERS, True),
        _field("attributes", T.ByteType()),
        _field("delete_horizon", T.TimestampType(), True),
        _field("segment_base", T.LongType()),
        # The record's rules' columns, as the source's task classified it (null on a table
        # written before it did, until the table is opened: ``Table.ensure``).
        _field("order_value", T.LongType(), True),
        _field("bad_version", T.BooleanType(), True),
        _field("tombstone", T.BooleanType(), True),
    ]
)


_STAGE_TIMES = [_field(f"{name}_at", T.TimestampType(), True) for name in (*STAGES, EXPIRED)]

# The deletion ledger: one row per delete (tombstone) of a topic with gdpr.deletion.sla.ms, and
# per erasure round one row per partition it erased (every value superseded before it began).
# Keys appear only as HMAC-SHA-256 hashes (segcompact.erasure.keyhash).
LEDGER_SCHEMA = T.StructType(
    [
        _field("kind", T.StringType()),  # "delete" | "round"
        *_PARTITION,
        _field("key_hash", T.StringType(), True),
        _field("offset", T.LongType(), True),  # the tombstone's
        _field("appended_at", T.TimestampType()),  # A: the SLA's clock starts here
        _field("deadline", T.TimestampType()),
        _field("horizon", T.TimestampType(), True),  # when the tombstone itself expires
        _field("round", T.LongType(), True),  # the round that erased the older values
        _field("expiry_round", T.LongType(), True),  # the round that erased the expired key
        *_STAGE_TIMES,
        _field("state_version", T.LongType(), True),  # the state commit that merged it
        # A round's target: per table, the version every older value is erased up to.
        _field("table_versions", T.MapType(T.StringType(), T.LongType()), True),
        _field("output_version", T.LongType(), True),  # the re-materialised output version
        _field("completed_at", T.TimestampType(), True),
        _field("status", T.StringType()),  # pending | met | breached
        _field("breach_stage", T.StringType(), True),
        _field("error", T.StringType(), True),  # why a stage could not be done, if it failed
        _field("updated_at", T.TimestampType()),
        # A round's: the partition's erasure_from it took, cleared once the round is written
        # (a mark left by a crash in between is known as taken, not taken again).
        _field("erasure_mark", T.TimestampType(), True),
    ]
)


def timestamp(ms: int) -> Column:
    """A timestamp literal from epoch milliseconds, as the tables store times."""
    return F.timestamp_millis(F.lit(ms))


@dataclass(frozen=True, slots=True)
class Table:
    """A Delta table by path or catalog name."""

    name: str
    schema: T.StructType
    storage: Storage = field(default_factory=Storage)  # how delta-rs opens it
    # Columns a new table is partitioned by, and properties it is created with (an existing
    # table keeps its layout).
    partition_by: tuple[str, ...] = ()
    created_with: tuple[tuple[str, str], ...] = ()
    # The rows of a table written by an earlier version with the columns this one added
    # (None: they are added empty).
    fill: Callable[[DataFrame], DataFrame] | None = field(default=None, compare=False)

    @property
    def is_path(self) -> bool:
        return not is_table_name(self.name)

    def ensure(self, spark: SparkSession, properties: Mapping[str, str] | None = None) -> None:
        """The table, created empty with its schema if it does not exist yet, with
        ``properties`` set. An existing table must have the schema's columns and types; nullable
        columns added by a later segcompact are added to it (empty, or with the table's rows
        rewritten by ``fill``, in one commit). An existing table on a file system delta-rs
        reads is checked without a Spark job."""
        read = self.reader(spark)
        text = read.schema_json()
        if text is None and isinstance(read, NativeReader) and self._created_as_spark_would(spark):
            text = read.create(self.schema.json(), self.partition_by, dict(properties or {}))
        have = None if text is None else T.StructType.fromJson(json.loads(text))
        if have is None:
            builder = DeltaTable.createIfNotExists(spark).addColumns(self.schema)
            if self.partition_by:
                builder = builder.partitionedBy(*self.partition_by)
            for key, value in self.created_with:
                builder = builder.property(key, value)
            if self.is_path:
                builder = builder.location(qualify(spark, self.name))
            else:
                builder = builder.tableName(self.name)
            have = builder.execute().toDF().schema
        types = {f.name: f.dataType for f in have}
        added = [f for f in self.schema if f.name not in types and f.nullable]
        if added and self.fill is not None:
            rows = self.fill(self.read(spark)).select(*self.schema.fieldNames())
            self._write(rows, "overwrite", mergeSchema="true")
        elif added:
            columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in added)
            spark.sql(f"ALTER TABLE {self.sql_name(spark)} ADD COLUMNS ({columns})")
        types.update({f.name: f.dataType for f in added})
        wrong = [
            f"{f.name} {f.dataType.simpleString()}"
            for f in self.schema
            if types.get(f.name) != f.dataType
        ]
        if wrong:
            raise ConfigError(
                f"{self.name}: this Delta table lacks segcompact's columns "
                f"{', '.join(wrong)} (written by another version or program?); "
                "point the config at a new location"
            )
        if properties:
            self._set_properties(spark, properties)

    def _created_as_spark_would(self, spark: SparkSession) -> bool:
        """Whether delta-rs creates this table as Spark's CREATE would: it asks for no table
        feature (deletion vectors: Spark's protocol for them differs from delta-rs's), and the
        session sets no Delta defaults for new tables (``spark.databricks.delta.properties
        .defaults.*``, a protocol version), which only Spark's CREATE applies."""
        return not self.created_with and not any(
            key.startswith(_CREATE_DEFAULTS) for key in spark.conf.getAll
        )

    def _set_properties(self, spark: SparkSession, properties: Mapping[str, str]) -> None:
        current = self.reader(spark).properties()
        if current.get("delta.appendOnly", "false").lower() == "true":
            raise ConfigError(
                f"{self.name}: table property delta.appendOnly = true keeps every value forever, "
                "so gdpr.deletion.sla.ms cannot be met; unset it or use another table"
            )
        changed = {k: v for k, v in properties.items() if current.get(k) != v}
        if changed:
            pairs = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(changed.items()))
            spark.sql(f"ALTER TABLE {self.sql_name(spark)} SET TBLPROPERTIES ({pairs})")

    def reader(self, spark: SparkSession) -> TableReader:
        """The table's reader now: delta-rs where it opens the table, else Spark."""
        return table_reader.reader(spark, self.name, self.storage)

    def vacuum(self, spark: SparkSession) -> None:
        """VACUUM under the table's own retention, with Delta's retention check on: by delta-rs
        where it may (:meth:`NativeReader.vacuum`), else by Spark."""
        read = self.reader(spark)
        if not (isinstance(read, NativeReader) and read.vacuum()):
            self.delta(spark).vacuum()

    def add_files(
        self, spark: SparkSession, files: Sequence[DataFile], write: tuple[str, int]
    ) -> bool:
        """Commit ``files``, written into the table, as one append by delta-rs, once per
        idempotent-write pair ``write``; False when delta-rs cannot (nothing committed)."""
        read = self.reader(spark)
        return isinstance(read, NativeReader) and read.add_files(files, write)

    def merge_rows(
        self,
        spark: SparkSession,
        rows: pa.Table,
        merge: RowsMerge,
        *,
        write: tuple[str, int] | None = None,
        into_nothing: bool = False,
    ) -> None:
        """MERGE ``rows`` (a few, held by the driver) into the table as ``merge`` says, once per
        idempotent-write pair ``write`` (None: no pair): by delta-rs where it may
        (:meth:`NativeReader.merge`), else by Spark. ``into_nothing``: the table holds none of
        the rows' keys, so Spark appends the inserted rows instead (its MERGE into nothing costs
        a join for no match)."""
        read = self.reader(spark)
        if isinstance(read, NativeReader) and read.merge(rows, merge, write):
            return
        source = spark.createDataFrame(rows).alias("s")
        if into_nothing and write is not None:
            app_id, version = write
            types = {f.name: f.dataType for f in self.schema}
            inserted = source.select(
                *(F.expr(merge.insert[n]).cast(types[n]).alias(n) for n in self.schema.fieldNames())
            )
            self.append(inserted, app_id=app_id, version=version)
            return
        with idempotent_writes(spark, write), session_settings(spark, SOURCE_AS_IS):
            merger = (
                self.delta(spark)
                .alias("t")
                .merge(source, merge.on)
                .whenMatchedUpdate(condition=merge.when, set=dict(merge.update))
            )
            if merge.insert:
                merger = merger.whenNotMatchedInsert(values=dict(merge.insert))
            merger.execute()

    def sql_name(self, spark: SparkSession) -> str:
        """How SQL names the table: ``delta.`<path>``` or its catalog name."""
        return f"delta.`{qualify(spark, self.name)}`" if self.is_path else self.name

    def delta(self, spark: SparkSession) -> DeltaTable:
        return delta_table(spark, self.name)

    def read(self, spark: SparkSession) -> DataFrame:
        return self.delta(spark).toDF()

    def overwrite(self, df: DataFrame, *, app_id: str, version: int) -> None:
        """Replace the table's rows; skipped if this (app_id, version) was written already."""
        self._write(df, "overwrite", txnAppId=app_id, txnVersion=str(version))

    def append(self, df: DataFrame, *, app_id: str, version: int) -> None:
        """Add ``df``'s rows; skipped if this (app_id, version) was written already."""
        self._write(df, "append", txnAppId=app_id, txnVersion=str(version))

    def _write(self, df: DataFrame, mode: str, **options: str) -> None:
        writer = df.write.format("delta").mode(mode).options(**options)
        if self.is_path:
            writer.save(qualify(df.sparkSession, self.name))
        else:
            writer.saveAsTable(self.name)


# Session settings with which Spark's CREATE gives a new table more than its schema says.
_CREATE_DEFAULTS = (
    "spark.databricks.delta.properties.defaults.",
    "spark.databricks.delta.minReaderVersion",
    "spark.databricks.delta.minWriterVersion",
)

# A new state table's properties. Deletion vectors: a MERGE marks the rows it replaces deleted
# and writes only the new ones, where without them it rewrites the whole file of each partition
# it touches (1.2 M rows to update 20,000 at 10 M keys). Once a topic has about 50 small
# files (one per batch that touched it), segcompact compacts it (``small_files``), purging the
# deleted rows; an erasure round purges the rest (REORG). Not Delta's auto compaction, which
# compacted every partition at a JVM's first write to it.
STATE_LAYOUT = (("delta.enableDeletionVectors", "true"),)


@dataclass(frozen=True, slots=True)
class Tables:
    """The Delta tables of one compactor."""

    state: Table
    partitions: Table
    pending: Table
    young: Table
    ledger: Table
    # Table properties every table gets (the deletion SLA's retention).
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def at(
        cls,
        state: str,
        partitions: str,
        pending: str,
        young: str,
        ledger: str,
        properties: Mapping[str, str] | None = None,
        storage: Storage | None = None,
        rankings: Rankings | None = None,
    ) -> Tables:
        """``rankings``: the topics' rules (the defaults' without), which classify the records
        of a pending table written before the source's task did."""
        storage = storage or Storage()
        # Records by Kafka partition: a batch's MERGE and a partition's re-materialisation
        # read only their partitions' files.
        by_partition = ("topic",)
        fill = functools.partial(classified, rankings=rankings or Rankings())
        return cls(
            Table(state, STATE_SCHEMA, storage, by_partition, STATE_LAYOUT),
            Table(partitions, PARTITIONS_SCHEMA, storage),
            Table(pending, PENDING_SCHEMA, storage, fill=fill),
            Table(young, YOUNG_SCHEMA, storage, by_partition),
            Table(ledger, LEDGER_SCHEMA, storage),
            dict(properties or {}),
        )

    @classmethod
    def of(cls, config: CompactorConfig) -> Tables:
        """The tables ``config``'s ``[state]`` names, with the properties its SLA needs."""
        s = config.state
        return cls.at(
            s.table,
            s.partitions_table,
            s.pending_table,
            s.young_table,
            s.ledger_table,
            retention_properties(retention_ms(config)),
            config.storage,
            Rankings.of(config),
        )

    def all(self) -> dict[str, Table]:
        """Every table by its role, in the order they are written."""
        return {
            "state": self.state,
            "young": self.young,
            "partitions": self.partitions,
            "pending": self.pending,
            "ledger": self.ledger,
        }

    def holding_records(self) -> dict[str, Table]:
        """The tables that hold records' keys and values, which erasure must reach: the
        partitions table holds numbers, the ledger keyed hashes only."""
        return {"state": self.state, "young": self.young, "pending": self.pending}

    def warm_up(self, spark: SparkSession) -> None:
        """An empty MERGE into every table Spark MERGEs into, which commits nothing: the JVM
        loads and compiles Delta's MERGE (10 s and more the first time, 2 s after) before a
        deadline counts on it. Not the pending table (overwritten, never MERGEd), nor the
        partitions table where delta-rs MERGEs its rows."""
        warmed = [self.state, self.young, self.ledger]
        partitions = self.partitions.reader(spark)
        if not (isinstance(partitions, NativeReader) and partitions.merges()):
            warmed.append(self.partitions)
        for table in warmed:
            empty = local_frame(spark, [], table.schema)
            (
                table.delta(spark)
                .alias("t")
                .merge(empty.alias("s"), "t.topic = s.topic AND t.partition = s.partition")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )

    def ensure(self, spark: SparkSession) -> None:
        """Create the missing ones and set their properties; refuse any without segcompact's
        columns."""
        for t in self.all().values():
            t.ensure(spark, self.properties)


def retention_properties(retention: int | None) -> dict[str, str]:
    """Delta's retention properties for a retention of removed files (None: Delta's defaults).

    VACUUM removes a file once it has been out of the snapshot this long, with Delta's safety
    check on. The log keeps no values (segcompact never puts one in a predicate), so its
    retention only has to be no shorter: Delta's 30 days unless the files' is longer.
    """
    if retention is None:
        return {}
    log = max(retention, LOG_RETENTION_MS)
    return {
        "delta.deletedFileRetentionDuration": f"interval {retention} milliseconds",
        "delta.logRetentionDuration": f"interval {log} milliseconds",
    }


LOG_RETENTION_MS = 30 * DAY_MS  # Delta's default


@contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """The session's SQL ``settings`` for what runs inside, as they were afterwards."""
    conf = spark.conf
    explicit = conf.getAll  # what was set (``get`` would also answer a built-in default)
    before = {key: explicit.get(key) for key in settings}
    for key, value in settings.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)


# A MERGE reads its source twice (the files it touches, then the rewrite) and by default first
# copies a source that is not a Delta scan, lest the two reads differ, and refuses a cached one
# uncopied, lest the cache hold an older version of a Delta table. The batch's sources need
# neither: rows built on the driver, or the batch's cached reduction of rolled (immutable)
# segments and of the partitions table as the batch read it before writing anything.
SOURCE_AS_IS = {
    "spark.databricks.delta.merge.materializeSource": "none",
    "spark.databricks.delta.merge.failSourceCachedAfterMaterialization": "false",
}


@contextmanager
def idempotent_writes(spark: SparkSession, pair: tuple[str, int] | None) -> Iterator[None]:
    """Delta skips a write whose (app id, version) ``pair`` this table has committed before
    (None: no pair, nothing skipped).

    For DML (MERGE, DELETE), which takes the pair from the session; ``Table.append`` and
    ``Table.overwrite`` pass it as write options instead.
    """
    if pair is None:
        yield
        return
    app_id, version = pair
    settings = {
        "spark.databricks.delta.write.txnAppId": app_id,
        "spark.databricks.delta.write.txnVersion": str(version),
    }
    with session_settings(spark, settings):
        yield
