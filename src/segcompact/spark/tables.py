"""The Delta tables segcompact owns: their schemas, and opening or creating them by path or name.

A table is named by a path (local, ``s3a://``, ``abfss://``, ``dbfs:/``…) or, on Databricks
and other catalogs, by a catalog name such as ``main.segcompact.state``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.config import CompactorConfig, is_table_name
from segcompact.errors import ConfigError

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
    ]
)


def timestamp(ms: int) -> Column:
    """A timestamp literal from epoch milliseconds, as the tables store times."""
    return F.timestamp_millis(F.lit(ms))


def qualify(spark: SparkSession, path: str) -> str:
    """``path`` made absolute on its file system, as Hadoop resolves it.

    Delta reads a relative location as a table identifier; a relative path means the working
    directory locally and the user's home directory on HDFS, which only Hadoop knows.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return str(fs.makeQualified(hadoop_path).toString())


@dataclass(frozen=True, slots=True)
class Table:
    """A Delta table by path or catalog name."""

    name: str
    schema: T.StructType

    @property
    def is_path(self) -> bool:
        return not is_table_name(self.name)

    def ensure(self, spark: SparkSession) -> DeltaTable:
        """The table, created empty with its schema if it does not exist yet; an existing table
        must have the schema's columns and types."""
        builder = DeltaTable.createIfNotExists(spark).addColumns(self.schema)
        if self.is_path:
            builder = builder.location(qualify(spark, self.name))
        else:
            builder = builder.tableName(self.name)
        table = builder.execute()
        have = {f.name: f.dataType for f in table.toDF().schema}
        wrong = [
            f"{f.name} {f.dataType.simpleString()}"
            for f in self.schema
            if have.get(f.name) != f.dataType
        ]
        if wrong:
            raise ConfigError(
                f"{self.name}: this Delta table lacks segcompact's columns "
                f"{', '.join(wrong)} (written by another version or program?); "
                "point the config at a new location"
            )
        return table

    def delta(self, spark: SparkSession) -> DeltaTable:
        if self.is_path:
            return DeltaTable.forPath(spark, qualify(spark, self.name))
        return DeltaTable.forName(spark, self.name)

    def read(self, spark: SparkSession) -> DataFrame:
        return self.delta(spark).toDF()

    def overwrite(self, df: DataFrame, *, app_id: str, version: int) -> None:
        """Replace the table's rows; skipped if this (app_id, version) was written already."""
        self._write(df, "overwrite", app_id, version)

    def append(self, df: DataFrame, *, app_id: str, version: int) -> None:
        """Add ``df``'s rows; skipped if this (app_id, version) was written already."""
        self._write(df, "append", app_id, version)

    def _write(self, df: DataFrame, mode: str, app_id: str, version: int) -> None:
        writer = (
            df.write.format("delta")
            .mode(mode)
            .option("txnAppId", app_id)
            .option("txnVersion", version)
        )
        if self.is_path:
            writer.save(qualify(df.sparkSession, self.name))
        else:
            writer.saveAsTable(self.name)


@dataclass(frozen=True, slots=True)
class Tables:
    """The Delta tables of one compactor."""

    state: Table
    partitions: Table
    pending: Table
    young: Table

    @classmethod
    def at(cls, state: str, partitions: str, pending: str, young: str) -> Tables:
        return cls(
            Table(state, STATE_SCHEMA),
            Table(partitions, PARTITIONS_SCHEMA),
            Table(pending, PENDING_SCHEMA),
            Table(young, YOUNG_SCHEMA),
        )

    @classmethod
    def of(cls, config: CompactorConfig) -> Tables:
        """The tables ``config``'s ``[state]`` names."""
        s = config.state
        return cls.at(s.table, s.partitions_table, s.pending_table, s.young_table)

    def ensure(self, spark: SparkSession) -> None:
        """Create the missing ones; refuse any without segcompact's columns."""
        for t in (self.state, self.partitions, self.pending, self.young):
            t.ensure(spark)


@contextmanager
def idempotent_writes(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """Delta skips a write whose (app id, version) this table has committed before.

    For DML (MERGE, DELETE), which takes the pair from the session; ``Table.append`` and
    ``Table.overwrite`` pass it as write options instead.
    """
    conf = spark.conf
    conf.set("spark.databricks.delta.write.txnAppId", app_id)
    conf.set("spark.databricks.delta.write.txnVersion", str(version))
    try:
        yield
    finally:
        conf.unset("spark.databricks.delta.write.txnAppId")
        conf.unset("spark.databricks.delta.write.txnVersion")
