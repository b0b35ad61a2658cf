"""segcompact's Delta tables: created once, and an incompatible existing table is refused."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import deltalake
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from delta.tables import DeltaTable
from deltalake.exceptions import DeltaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.delta.native import NativeReader
from segcompact.erasure.ledger_reads import read_rows
from segcompact.errors import ConfigError
from segcompact.spark.ledger import rows_frame
from segcompact.spark.partitions import mark_erasure
from segcompact.spark.small_files import MIN_FILES, compact_small_files
from segcompact.spark.table_reader import SparkReader
from segcompact.spark.tables import (
    PARTITIONS_SCHEMA,
    PENDING_SCHEMA,
    SOURCE_AS_IS,
    STATE_LAYOUT,
    STATE_SCHEMA,
    Table,
    Tables,
    session_settings,
)
from tests.support.spark import jobs_started
from tests.support.table_rows import HOUR, NOW, partition_row, ts

pytestmark = pytest.mark.spark

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_every_table_is_created_once_and_reopened(spark: SparkSession, tmp_path: Path) -> None:
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    tables.ensure(spark)
    tables.ensure(spark)  # again: the same tables, no error
    for t in (tables.state, tables.partitions, tables.pending, tables.young):
        assert t.read(spark).schema.fieldNames() == t.schema.fieldNames()
    # A new state table: deletion vectors; the others Delta's defaults.
    assert dict(STATE_LAYOUT).items() <= tables.state.reader(spark).properties().items()
    assert not dict(STATE_LAYOUT).keys() & tables.young.reader(spark).properties().keys()


def _creator(path: Path) -> str:
    return str(deltalake.DeltaTable(str(path)).history()[-1]["engineInfo"])


def test_delta_rs_creates_the_tables_without_table_features_as_spark_would(
    spark: SparkSession, tmp_path: Path
) -> None:
    names = ("state", "parts", "pending", "young", "ledger")
    retention = {"delta.deletedFileRetentionDuration": "interval 3600000 milliseconds"}
    tables = Tables.at(*(str(tmp_path / n) for n in names), properties=retention)
    tables.ensure(spark)
    tables.ensure(spark)
    creators = {n: _creator(tmp_path / n) for n in names}
    assert creators["state"].startswith("Apache-Spark"), creators  # deletion vectors: Spark's
    assert all(creators[n].startswith("delta-rs") for n in names[1:]), creators
    for n in names[1:]:
        log = deltalake.DeltaTable(str(tmp_path / n))
        assert log.version() == 0  # the properties are in the creating commit
        assert retention.items() <= log.metadata().configuration.items()
        assert (log.protocol().min_reader_version, log.protocol().min_writer_version) == (1, 2)
    for t in tables.all().values():  # Spark reads each as it was declared, and writes it
        assert t.read(spark).schema == t.schema
    young = tables.young
    young.append(spark.createDataFrame([], young.schema), app_id="a", version=1)
    assert young.reader(spark).version() == 1
    assert DeltaTable.forPath(spark, young.name).detail().first()["partitionColumns"] == ["topic"]


def test_spark_creates_a_table_where_the_session_sets_delta_defaults(
    spark: SparkSession, tmp_path: Path
) -> None:
    key = "spark.databricks.delta.properties.defaults.checkpointInterval"
    with session_settings(spark, {key: "7"}):
        Table(str(tmp_path / "t"), PARTITIONS_SCHEMA).ensure(spark)
    assert _creator(tmp_path / "t").startswith("Apache-Spark")
    assert deltalake.DeltaTable(str(tmp_path / "t")).metadata().configuration == {
        "delta.checkpointInterval": "7"
    }


def test_an_existing_state_table_keeps_its_layout(spark: SparkSession, tmp_path: Path) -> None:
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    plain = Table(tables.state.name, tables.state.schema, partition_by=("topic", "partition"))
    plain.ensure(spark)
    tables.ensure(spark)
    assert not dict(STATE_LAYOUT).keys() & tables.state.reader(spark).properties().keys()


def state_rows(spark: SparkSession, topic: str, partition: int) -> DataFrame:
    """One state row of ``topic``/``partition``, in one file when appended."""
    row = {f.name: None for f in STATE_SCHEMA} | {
        "topic": topic,
        "partition": partition,
        "key": b"k",
        "offset": 0,
        "timestamp": EPOCH,
        "timestampType": 0,
        "tombstone": False,
        "cleaned_at": EPOCH,
    }
    return spark.createDataFrame([row], STATE_SCHEMA).coalesce(1)


@pytest.mark.parametrize("delta_rs", ["reads", "none"])
def test_a_state_table_not_partitioned_by_kafka_partition_is_not_compacted(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delta_rs: str
) -> None:
    plain = Table(str(tmp_path / "state"), STATE_SCHEMA)  # made before segcompact, unpartitioned
    plain.ensure(spark)
    for version in range(2):
        plain.append(state_rows(spark, "t", 0), app_id="test", version=version)
    if delta_rs == "none":  # as for a catalog name: Spark reads the layout
        monkeypatch.setattr(Table, "reader", lambda self, spark: SparkReader(spark, self.name))
    with session_settings(spark, {MIN_FILES: "1"}):
        compact_small_files(spark, plain, [("t", 0)])
    history = spark.sql(f"DESCRIBE HISTORY delta.`{plain.name}`").collect()
    assert "OPTIMIZE" not in {r.operation for r in history}


# A table partition: a topic (the layout of new tables), or a Kafka partition (earlier ones').
LAYOUTS = {"topic": ("topic",), "kafka partition": ("topic", "partition")}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("delta_rs", ["reads", "none", "fails"])
def test_small_files_are_compacted_in_the_table_partitions_that_hold_many(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    delta_rs: str,
    layout: str,
) -> None:
    state = Table(str(tmp_path / "state"), STATE_SCHEMA, partition_by=LAYOUTS[layout])
    state.ensure(spark)
    appended = [("t", 0), ("t", 0), ("t", 1), ("u", 0)]
    for version, (topic, partition) in enumerate(appended):
        state.append(state_rows(spark, topic, partition), app_id="test", version=version)

    def fails(*_: object, **__: object) -> None:
        raise DeltaError("unsupported reader features")

    if delta_rs == "fails":  # a protocol feature delta-rs lacks
        monkeypatch.setattr(deltalake.DeltaTable, "get_add_actions", fails)
    elif delta_rs == "none":  # as for a catalog name
        monkeypatch.setattr(Table, "reader", lambda self, spark: SparkReader(spark, self.name))
    with session_settings(spark, {MIN_FILES: "2"}):
        compact_small_files(spark, state, [("t", 0), ("t", 1), ("u", 0)])
    history = spark.sql(f"DESCRIBE HISTORY delta.`{state.name}`").orderBy("version").collect()
    assert history[-1].operation == "OPTIMIZE"
    predicate = history[-1].operationParameters["predicate"]
    assert "topic = t" in predicate and "topic = u" not in predicate
    files = state.read(spark).groupBy("topic").agg(F.countDistinct("_metadata.file_path"))
    counts = {r[0]: r[1] for r in files.collect()}
    if layout == "topic":  # t's three files (two partitions) in one; u's one file alone
        assert "partition" not in predicate
        assert counts == {"t": 1, "u": 1}
    else:  # t-0's two files in one; t-1 and u-0 had one each
        assert "partition = 0" in predicate and "partition = 1" not in predicate
        assert counts == {"t": 2, "u": 1}
    assert state.read(spark).count() == len(appended)


def test_the_warm_up_commits_nothing_and_reads_through_delta_rs_or_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    tables.ensure(spark)
    before = {n: t.reader(spark).version() for n, t in tables.all().items()}
    tables.warm_up(spark)
    assert {n: t.reader(spark).version() for n, t in tables.all().items()} == before
    assert tables.partitions.reader(spark).arrow().num_rows == 0
    # Deletion vectors: delta-rs reads them through its SQL, Spark reads them; the same rows.
    row = {f.name: None for f in tables.ledger.schema} | {
        "kind": "round",
        "topic": "t",
        "partition": 0,
        "round": 1,
        "appended_at": 0,
        "deadline": 0,
        "status": "pending",
        "updated_at": 0,
    }
    both = rows_frame(spark, [row, {**row, "round": 2}]).coalesce(1)  # one file
    both.write.format("delta").mode("append").save(tables.ledger.name)
    where = pc.field("round") == 2
    native = read_rows(tables.ledger.reader(spark).arrow(["round", "deadline"], where))
    spark.sql(
        f"ALTER TABLE {tables.ledger.sql_name(spark)} "
        "SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
    )
    spark.sql(f"DELETE FROM {tables.ledger.sql_name(spark)} WHERE round = 1")
    assert isinstance(tables.ledger.reader(spark), NativeReader)
    assert read_rows(tables.ledger.reader(spark).arrow(["round", "deadline"], where)) == native
    assert native == [{"round": 2, "deadline": 0}]
    assert tables.ledger.reader(spark).arrow(["round"]).column("round").to_pylist() == [2], (
        "the row the deletion vector marks is not read"
    )
    history = tables.ledger.delta(spark).history(1).first()
    assert history is not None and int(history.operationMetrics["numDeletionVectorsAdded"]) == 1


def test_the_warm_up_leaves_to_delta_rs_the_partitions_table_it_merges(
    spark: SparkSession, tmp_path: Path
) -> None:
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    tables.ensure(spark)
    tables.warm_up(spark)

    def jobs() -> int:
        before = jobs_started(spark)
        tables.warm_up(spark)
        return jobs_started(spark) - before

    by_delta_rs = jobs()
    read = tables.partitions.reader(spark)
    assert isinstance(read, NativeReader) and read.merges()
    # Deletion vectors, a reader feature: Spark MERGEs the table, so the warm-up warms it too.
    spark.sql(
        f"ALTER TABLE {tables.partitions.sql_name(spark)} "
        "SET TBLPROPERTIES ('delta.enableDeletionVectors' = true)"
    )
    read = tables.partitions.reader(spark)
    assert isinstance(read, NativeReader) and not read.merges()
    assert jobs() > by_delta_rs


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


def test_a_merge_takes_the_batchs_cached_source_as_it_is(
    spark: SparkSession, tmp_path: Path
) -> None:
    target = str(tmp_path / "t")
    spark.range(100).selectExpr("id", "0 AS v").write.format("delta").save(target)
    source = spark.range(50, 150).selectExpr("id", "1 AS v").persist()

    def merge() -> int:
        jobs = jobs_started(spark)
        (
            DeltaTable.forPath(spark, target)
            .alias("t")
            .merge(source.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        return jobs_started(spark) - jobs

    try:
        copied = merge()  # Delta's default: the source copied first
        before = {key: spark.conf.getAll.get(key) for key in SOURCE_AS_IS}
        with session_settings(spark, SOURCE_AS_IS):
            as_is = merge()  # by default Delta refuses a cached source it has not copied
        assert {key: spark.conf.getAll.get(key) for key in SOURCE_AS_IS} == before
    finally:
        source.unpersist()
    assert as_is < copied
    assert spark.read.format("delta").load(target).where("v = 1").count() == 100


def test_the_states_values_get_a_dictionary_only_where_it_pays(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Parquet's writer drops the dictionary of a column chunk whose first page it does not
    shrink: distinct high-entropy values are written plain (no dictionary to build for the rest
    of the chunk), repeated ones keep it; compressed by Spark's default codec, snappy
    (docs/performance.md, "State writes")."""
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    tables.state.ensure(spark)
    rnd = random.Random(43)
    repeated = [rnd.randbytes(256) for _ in range(10)]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        (topic, 0, b"k%d" % i, i, at, 0, value, None, None, False, None, at)
        for i in range(300)
        for topic, value in (("random", rnd.randbytes(256)), ("repeated", repeated[i % 10]))
    ]
    one_task = spark.createDataFrame(rows, STATE_SCHEMA).coalesce(1)  # a file a topic
    tables.state.append(one_task, app_id="test", version=0)

    def value_column(topic: str) -> pq.ColumnChunkMetaData:
        (file,) = (tmp_path / "state" / f"topic={topic}").glob("*.parquet")
        chunk = pq.ParquetFile(file).metadata.row_group(0)
        (column,) = [
            chunk.column(i)
            for i in range(chunk.num_columns)
            if chunk.column(i).path_in_schema == "value"
        ]
        return column

    dictionary = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    plain, kept = value_column("random"), value_column("repeated")
    assert not dictionary & set(plain.encodings) and not plain.has_dictionary_page
    assert dictionary & set(kept.encodings) and kept.has_dictionary_page
    assert plain.compression == kept.compression == "SNAPPY"


def test_the_erasure_clock_is_marked_only_where_it_moves(
    spark: SparkSession, tmp_path: Path
) -> None:
    tables = Tables.at(
        *(str(tmp_path / n) for n in ("state", "parts", "pending", "young", "ledger"))
    )
    table = tables.partitions
    table.ensure(spark)
    rows = spark.createDataFrame([partition_row(0), partition_row(1)], PARTITIONS_SCHEMA)
    rows.write.format("delta").mode("append").save(table.name)

    def mark(*appended: tuple[int, int]) -> tuple[int, dict[int, datetime | None]]:
        """Graduated records' earliest times per partition marked at NOW: the table's
        version and clocks after it."""
        frame = spark.createDataFrame(
            [("t", p, ts(ms)) for p, ms in appended],
            "topic string, partition int, appended_at timestamp",
        )
        mark_erasure(spark, table, frame, NOW)
        clocks = table.reader(spark).arrow(columns=["partition", "erasure_from"]).to_pylist()
        return table.reader(spark).version(), {r["partition"]: r["erasure_from"] for r in clocks}

    version = table.reader(spark).version()
    assert mark((0, NOW - HOUR)) == (version + 1, {0: ts(NOW - HOUR), 1: None})
    # Later records: the clock runs from earlier already, no commit.
    assert mark((0, NOW - HOUR // 2)) == (version + 1, {0: ts(NOW - HOUR), 1: None})
    # Earlier ones move it; a time after NOW counts from NOW.
    after = mark((0, NOW - 2 * HOUR), (1, NOW + HOUR))
    assert after == (version + 2, {0: ts(NOW - 2 * HOUR), 1: ts(NOW)})
