"""The winners of a new partition written by the source's task as the state's own files
(``spark.state_files``): a task with a filing writes exactly the rows it would hand over as
winners, as the state's rows at the batch's time, with the statistics Spark's Delta gives
such a file; the rest of its output is unchanged."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from segcompact.compaction.rules import RULE_FIELDS, Ranking, Rankings
from segcompact.config import TombstoneMode
from segcompact.delta.data_files import Statistics
from segcompact.delta.native import NativeReader
from segcompact.delta.reader import TableReader
from segcompact.discovery import SegmentFile
from segcompact.format.arrow import SCHEMA
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.manifest import ManifestEntry
from segcompact.samples import generate_partition
from segcompact.spark.source import SegmentTask, SourceOptions, read_task
from segcompact.spark.state_files import (
    FILE_SCHEMA,
    FiledWinners,
    Filing,
    StateFile,
    filing_location,
    named_files,
)
from segcompact.spark.table_reader import SparkReader
from segcompact.spark.tables import STATE_SCHEMA, Table, Tables
from segcompact.storage import Storage
from tests.spark.test_compactor import Scenario
from tests.unit.test_keys_first import FLAG, segments, write

NOW = 1_700_000_000_123
RETENTION = 86_400_000
TOPIC = "t"


def options(tmp: Path, filing: Filing | None, ranking: Ranking, chunk_bytes: int) -> SourceOptions:
    at = tmp / "filing.json"
    if filing is not None:
        filing.publish(str(at), Storage())
    return SourceOptions(
        roots=(str(tmp),),
        rolled_only=False,
        manifest=None,
        max_segments_per_trigger=None,
        chunk_records=3,
        chunk_bytes=chunk_bytes,
        max_partition_bytes=1 << 30,
        rankings=Rankings(default=ranking),
        summaries=True,
        state_files=str(at),
    )


def task(paths: list[Path], partitions: int = 1) -> SegmentTask:
    """A task of the segments at ``paths``, read as each of ``partitions`` partitions in turn."""
    return SegmentTask(
        tuple(
            ManifestEntry(
                len(paths) * partition + i + 1,
                SegmentFile(TOPIC, partition, _base(p), str(p), os.path.getsize(p)),
            )
            for partition in range(partitions)
            for i, p in enumerate(paths)
        )
    )


def _base(path: Path) -> int:
    return int(path.name.split(".")[0])


def rows(out: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [r for b in out for r in b.to_pylist()]


def is_winner(r: dict[str, Any]) -> bool:
    return (
        not r["segment_end"]
        and r["key"] is not None
        and not r["is_transactional"]
        and not r["is_control"]
    )


def as_state_row(r: dict[str, Any]) -> dict[str, Any]:
    """A winner as the state holds it, at ``NOW``."""
    row = {f.name: r[f.name] for f in FILE_SCHEMA if f.name not in ("delete_horizon", "cleaned_at")}
    horizon = r["delete_horizon"]
    if r["tombstone"] and horizon is None:
        horizon = pa.scalar((NOW + RETENTION) * 1000, FILE_SCHEMA.field("cleaned_at").type).as_py()
    row["delete_horizon"] = horizon if r["tombstone"] else None
    row["cleaned_at"] = pa.scalar(NOW * 1000, FILE_SCHEMA.field("cleaned_at").type).as_py()
    return row


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    segments(),
    st.sampled_from(list(TombstoneMode)),
    st.sampled_from([1 << 20, 64]),  # one pass, or keys first
    st.sampled_from([(), (0,), (0, 1)]),
)
def test_a_task_files_the_winners_it_would_hand_over_and_nothing_else(
    tmp_path_factory: pytest.TempPathFactory,
    segments: list[list[bytes]],
    tombstones: TombstoneMode,
    chunk_bytes: int,
    known: tuple[int, ...],
) -> None:
    """Partitions 0 and 1 of a topic, in one task: the winners of those the state does not know
    go to one file."""
    tmp = tmp_path_factory.mktemp("filing")
    paths = write(_directory(tmp / "log"), segments)
    ranking = Ranking(
        tombstone_mode=tombstones.value,
        tombstone_header=FLAG if tombstones is TombstoneMode.HEADER else None,
    )
    table = tmp / "state"
    filing = Filing(NOW, str(table), frozenset((TOPIC, p) for p in known), {TOPIC: RETENTION}, None)
    segments_of = task(paths, partitions=2)

    plain = rows(list(read_task(segments_of, options(tmp / "a", None, ranking, chunk_bytes))))
    filed = rows(list(read_task(segments_of, options(tmp / "b", filing, ranking, chunk_bytes))))

    names = [r["state_file"] for r in filed if r["state_file"] is not None]
    taken = [r for r in plain if is_winner(r) and r["partition"] not in known]
    event(f"{len(known)} known" if not taken else f"filed, {len(known)} known")
    if not taken:  # partitions the state knows, or nothing to write
        assert filed == plain and not names
        assert not table.exists()
        return
    # The rest of the output is the plain output's, in its order; the last summary names the file.
    (name,) = names
    assert filed[-1]["state_file"] == name
    assert [{**r, "state_file": None} for r in filed] == [r for r in plain if r not in taken]
    (f,) = named_files([name])
    written = pq.read_table(table / f.path)
    assert written.schema == FILE_SCHEMA
    # Its rows in one row group, however many batches they came in (as Spark writes them).
    assert pq.ParquetFile(table / f.path).metadata.num_row_groups == 1
    order = lambda r: (r["partition"], r["offset"])  # noqa: E731
    assert sorted(written.to_pylist(), key=order) == sorted(map(as_state_row, taken), key=order)
    assert (f.topic, f.size) == (TOPIC, os.path.getsize(table / f.path))
    assert json.loads(f.stats) == json.loads(statistics(written))
    for p in f.partitions:
        winners = [r for r in taken if r["partition"] == p.partition]
        newest = max(winners, key=lambda r: r["offset"])
        assert (p.records, p.first_timestamp_ms) == (
            len(winners),
            min(_ms(r["timestamp"]) for r in winners),
        )
        assert (p.last_offset, p.compression) == (newest["offset"], newest["compression"])
    assert {p.partition for p in f.partitions} == {r["partition"] for r in taken}
    assert f.path.startswith(f"topic={TOPIC}/") and len(list(table.rglob("*.parquet"))) == 1


def statistics(rows: pa.Table) -> str:
    stats = Statistics(rows.schema)
    stats.add(rows)
    return stats.to_json()


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


def _ms(value: Any) -> int:
    return (
        int(pa.scalar(value, FILE_SCHEMA.field("timestamp").type).cast(pa.int64()).as_py()) // 1000
    )


def test_a_task_files_nothing_without_a_filing_or_for_a_topic_it_does_not_take(
    tmp_path: Path,
) -> None:
    batches = [[build_batch([Record(o, 0, b"k", b"v") for o in range(3)])]]
    paths = write(_directory(tmp_path / "log"), batches)
    ranking = Ranking()
    plain = rows(list(read_task(task(paths), options(tmp_path / "a", None, ranking, 1 << 20))))
    # No filing left: the rows come out.
    assert [r["offset"] for r in plain if is_winner(r)] == [2]
    # A topic without a retention in the filing (lagged, with an SLA, not by offset): the same.
    other = Filing(NOW, str(tmp_path / "state"), frozenset(), {TOPIC: None}, RETENTION)
    assert (
        rows(list(read_task(task(paths), options(tmp_path / "b", other, ranking, 1 << 20))))
        == plain
    )
    assert not (tmp_path / "state").exists()


def test_the_files_schema_is_the_states_but_its_partition_column() -> None:
    """The task writes the state's columns in Arrow form without importing the Spark table
    definitions; this holds the two the same."""
    columns = StructType([f for f in STATE_SCHEMA if f.name != "topic"])
    assert to_arrow_schema(columns, timezone="UTC").equals(FILE_SCHEMA)


# --- the statistics, against Spark's Delta ---------------------------------------------------


@pytest.fixture(scope="module")
def spark_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Tables:
    base = tmp_path_factory.mktemp("tables")
    tables = Tables.at(*(str(base / n) for n in ("s", "p", "q", "y", "l")))
    tables.state.ensure(spark)
    return tables


state_rows = st.lists(
    st.fixed_dictionaries(
        {
            "partition": st.integers(0, 3),
            "key": st.binary(min_size=1, max_size=4),
            "offset": st.integers(0, 1 << 40),
            "timestamp": st.integers(0, 1 << 42),
            "timestampType": st.integers(0, 1),
            "value": st.none() | st.binary(max_size=4),
            "headers": st.lists(
                st.fixed_dictionaries(
                    {"key": st.text(max_size=3), "value": st.none() | st.binary(max_size=2)}
                ),
                max_size=2,
            ),
            "order_value": st.none() | st.integers(-(1 << 62), 1 << 62),
            "tombstone": st.booleans(),
            "delete_horizon": st.none() | st.integers(0, 1 << 42),
            "cleaned_at": st.integers(0, 1 << 42),
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(state_rows)
def test_the_statistics_are_those_sparks_delta_writes(
    spark: SparkSession, spark_table: Tables, rows: list[dict[str, Any]]
) -> None:
    times = ("timestamp", "delete_horizon", "cleaned_at")
    for r in rows:
        for t in times:
            r[t] = None if r[t] is None else r[t] * 1000
    written = pa.Table.from_pylist(rows, schema=FILE_SCHEMA)
    before = spark_table.state.reader(spark).version()
    frame = spark.createDataFrame(written.append_column("topic", pa.array(["t"] * len(rows))))
    spark_table.state.append(frame.coalesce(1), app_id="stats", version=before)
    log = Path(spark_table.state.name) / "_delta_log" / f"{before + 1:020d}.json"
    (add,) = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    assert json.loads(statistics(written)) == json.loads(add["stats"])


def test_files_are_committed_once_per_pair_whichever_engine_committed_it(
    spark: SparkSession, spark_table: Tables
) -> None:
    table = spark_table.state
    read = table.reader(spark)
    assert isinstance(read, NativeReader)
    filing = Filing(NOW, read.location, frozenset(), {}, RETENTION)
    record = {
        "key": b"k",
        "value": b"v",
        "partition": 0,
        "offset": 5,
        "timestamp": NOW * 1000,
        "timestampType": 0,
        "headers": [],
        "is_transactional": False,
        "is_control": False,
        "tombstone": False,
        "delete_horizon": None,
        "order_value": None,
        "compression": 0,
    }
    fields = [*SCHEMA, *RULE_FIELDS]
    rows = pa.RecordBatch.from_pylist(
        [record], schema=pa.schema([f for f in fields if f.name in record])
    )

    def filed() -> FiledWinners:
        state_file = StateFile(filing, Storage(), "pair")
        assert state_file.take(rows).num_rows == 0
        done = state_file.finish()
        assert done is not None
        return done

    version = read.version()
    assert table.add_files(spark, [filed().data_file()], ("files", 1))
    assert table.add_files(spark, [filed().data_file()], ("files", 1))  # a replay: skipped
    assert table.reader(spark).version() == version + 1
    # Spark's writes honour the pair delta-rs committed, and delta-rs Spark's.
    table.append(spark.createDataFrame([], table.schema), app_id="files", version=1)
    assert table.reader(spark).version() == version + 1
    table.append(spark.createDataFrame([], table.schema), app_id="spark", version=4)
    assert table.add_files(spark, [filed().data_file()], ("spark", 4))
    assert table.reader(spark).version() == version + 2
    state = table.read(spark).where("topic = 'pair'").collect()
    assert [(r.partition, r.key, r.offset, r.cleaned_at is not None) for r in state] == [
        (0, b"k", 5, True)
    ]


def test_where_delta_rs_cannot_commit_to_the_state_spark_writes_the_rows_and_no_filing_is_left(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Scenario(spark, tmp_path)
    # One an earlier run left (killed mid-batch), when the state was somewhere else.
    at = filing_location(s.config.stream.checkpoint)
    Filing(NOW, str(tmp_path / "elsewhere"), frozenset(), {}, RETENTION).publish(at, Storage())
    state = s.config.state.table
    delta_rs = Table.reader

    def reader(self: Table, spark: SparkSession) -> TableReader:
        # As for a catalog name: the state read by Spark, and committed by Spark only.
        return SparkReader(spark, self.name) if self.name == state else delta_rs(self, spark)

    monkeypatch.setattr(Table, "reader", reader)
    segments = generate_partition(random.Random(3), codec=Compression.LZ4)

    s.arrive([("by-offset", 0, seg) for seg in segments])

    s.check()
    assert not os.path.exists(at) and not (tmp_path / "elsewhere").exists()
    (added,) = DeltaTable(state).history(limit=1)
    assert added["engineInfo"].startswith("Apache-Spark") and added["operation"] == "WRITE"
