"""The Delta tables segcompact owns: their schemas, and opening or creating them by path or name.

A table is named by a path (local, ``s3a://``, ``abfss://``, ``dbfs:/``…) or, on Databricks
and other catalogs, by a catalog name such as ``main.segcompact.state``.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from segcompact.config import is_table_name
from segcompact.errors import ConfigError

HEADERS = T.ArrayType(
    T.StructType([T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())])
)

STATE_SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("key", T.BinaryType(), False),
        T.StructField("offset", T.LongType(), False),
        T.StructField("timestamp", T.TimestampType(), False),
        T.StructField("timestampType", T.IntegerType(), False),
        T.StructField("value", T.BinaryType(), True),
        T.StructField("headers", HEADERS, True),
        T.StructField("order_value", T.LongType(), True),
        T.StructField("tombstone", T.BooleanType(), False),
        T.StructField("delete_horizon", T.TimestampType(), True),
        T.StructField("cleaned_at", T.TimestampType(), False),
    ]
)

PARTITIONS_SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("log_start_offset", T.LongType(), False),
        T.StructField("log_end_offset", T.LongType(), False),
        # Earliest record timestamp not yet materialised (KIP-354's clock starts here).
        T.StructField("first_dirty_timestamp", T.TimestampType(), True),
        T.StructField("first_dirty_appended_at", T.TimestampType(), True),
        T.StructField("dirty_bytes", T.LongType(), False),
        T.StructField("clean_bytes", T.LongType(), False),
        T.StructField("segments", T.LongType(), False),
        T.StructField("records", T.LongType(), False),  # data records read (markers excluded)
        T.StructField("keyless_records", T.LongType(), False),
        T.StructField("bad_version_headers", T.LongType(), False),
        T.StructField("compression", T.IntegerType(), True),  # codec of the newest input batch
        T.StructField("last_materialized_at", T.TimestampType(), True),
        T.StructField("materialized_version", T.LongType(), True),
        T.StructField("materialized_log_start", T.LongType(), True),
        # Earliest delete horizon among the tombstones in the published output.
        T.StructField("output_next_horizon", T.TimestampType(), True),
        T.StructField("uncleanable_reason", T.StringType(), True),
        T.StructField("updated_at", T.TimestampType(), False),
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
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("producer_id", T.LongType(), False),
        T.StructField("is_control", T.BooleanType(), False),
        T.StructField("commit", T.BooleanType(), True),
        T.StructField("key", T.BinaryType(), True),
        T.StructField("value", T.BinaryType(), True),
        T.StructField("offset", T.LongType(), False),
        T.StructField("timestamp", T.TimestampType(), False),
        T.StructField("timestampType", T.IntegerType(), False),
        T.StructField("headers", HEADERS, True),
        T.StructField("attributes", T.ByteType(), False),
        T.StructField("delete_horizon", T.TimestampType(), True),
        T.StructField("segment_base", T.LongType(), False),
    ]
)


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
