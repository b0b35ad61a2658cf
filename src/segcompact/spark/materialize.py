"""Re-materialisation: due partitions' state written back as Kafka segments, published atomically.

A partition's output is its state rows (compacted) and its young rows (records younger than
``min.compaction.lag.ms`` and every later one, raw), in offset order: Kafka's cleaned log up to
the first uncleanable offset, then the log as it was.

Each version is written aside, on the executor that holds the partition's rows, and published
by the driver with one atomic write of a small manifest (see :mod:`segcompact.publication`), on
a local disk or an object store alike; superseded versions are removed after the publish.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import SparkFiles
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from segcompact.clock import Clock, at_ms
from segcompact.compaction.output import OUTPUT_NOT_WRITTEN, ROWS, PartitionWriter, record_sizes
from segcompact.compaction.rules import is_young
from segcompact.compaction.triggers import Reason, decision
from segcompact.config import CompactorConfig, TombstoneMode
from segcompact.delta.merge_sql import BY_PARTITION, RowsMerge
from segcompact.delta.pinned import SORT_MEMORY, Pinned, SortError, partitions_log
from segcompact.format.attributes import Compression, RecordAttr
from segcompact.publication import Output, OutputFile, Publication, new_version_directory
from segcompact.spark.frames import local_rows
from segcompact.spark.table_reader import of_partitions
from segcompact.spark.tables import RECORD_FIELDS, Tables
from segcompact.storage import Storage
from segcompact.timing import timed

log = logging.getLogger(__name__)

_RESULT = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("bytes", T.LongType()),
        T.StructField("segments", T.IntegerType()),
        T.StructField("records", T.LongType()),
        T.StructField("next_horizon", T.LongType()),
        T.StructField("dirty_bytes", T.LongType()),  # the young rows: written, not compacted
        T.StructField("first_dirty", T.LongType()),
        T.StructField("files", T.StringType()),  # JSON: name, size and CRC-32C of each file
        T.StructField("unread", T.StringType()),  # why delta-rs could not read it (not written)
        T.StructField("failed", T.StringType()),  # why its rows could not be written (unpublished)
    ]
)
_ROW_COLUMNS = [f.name for f in RECORD_FIELDS]
_TOMBSTONE_BIT = int(RecordAttr.TOMBSTONE)  # KIP-87's attribute mode
# What a partition costs a write task besides its bytes (a writer, its files, a publication),
# in bytes of rows: small partitions share a task.
_TASK_FIXED_BYTES = 1 << 20
_PUBLISHERS = 8  # the driver's threads publishing partitions' versions


@dataclass(frozen=True, slots=True)
class Plan:
    """How to write one partition's next version."""

    topic: str
    partition: int
    version: int
    log_start_offset: int
    log_end_offset: int
    compression: Compression
    segment_bytes: int
    index_interval_bytes: int
    output: str  # the output location
    storage: Storage
    directory: str  # this attempt's version directory, relative to the output
    reasons: tuple[str, ...]
    tombstone_attribute: bool  # KIP-87's attribute mode: tombstones carry attribute bit 0
    now_ms: int  # when the plan was made: which rows are young (min.compaction.lag.ms)
    min_compaction_lag_ms: int
    read_bytes: int  # the log it replaces: the last version's bytes and the dirty bytes since


def _codec(topic_codec: Compression | None, input_codec: int | None) -> Compression:
    """The topic's ``compression.type``, or for "producer" (None) the input's codec."""
    if topic_codec is not None:
        return topic_codec
    return Compression(input_codec or 0)


class PlanWriter:
    """Writes one partition's next version (``plan``) from its rows (state and young, with
    ``raw``), given in offset order a part at a time; runs on executors.

    An exception the rows raise (not I/O, nor memory) fails this partition alone: its result
    row says why (``failed``), the rest of its rows are ignored, and the other partitions of the
    task are written. Their data cannot fail one another's publication."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.directory = Output(plan.output, plan.storage).version_directory(plan.directory)
        self.segments = PartitionWriter(
            self.directory,
            log_end_offset=plan.log_end_offset,
            log_start_offset=plan.log_start_offset,
            compression=plan.compression,
            segment_bytes=plan.segment_bytes,
            index_interval_bytes=plan.index_interval_bytes,
        )
        self.records = 0
        self.dirty_bytes = 0  # the raw (young) rows': written, not compacted
        self.next_horizon: int | None = None
        self.first_young: int | None = None
        self.first_raw: int | None = None
        self.failed: str | None = None

    def add(self, rows: pa.Table) -> None:
        if self.failed is not None:
            return
        try:
            self._add(rows)
        except (OSError, MemoryError):
            raise  # maybe transient: Spark retries the task
        except Exception as e:  # this partition's rows: it alone fails
            first, last = rows.column("offset")[0].as_py(), rows.column("offset")[-1].as_py()
            self.failed = _failure(f"writing state offsets {first} to {last}", e)

    def _add(self, rows: pa.Table) -> None:
        raw = rows.column("raw").to_numpy()
        tombstone = rows.column("tombstone").to_numpy()
        horizons = _millis(rows.column("delete_horizon"))
        bit = _TOMBSTONE_BIT if self.plan.tombstone_attribute else 0
        out = pa.table(
            {
                "offset": rows.column("offset"),
                "timestamp": _millis(rows.column("timestamp")),
                "key": rows.column("key"),
                "value": rows.column("value"),
                "headers": rows.column("headers"),
                "attributes": pa.array(np.where(tombstone, bit, 0).astype(np.int8)),
                "tombstone": rows.column("tombstone"),
                "delete_horizon": horizons,
            },
            schema=ROWS,
        )
        self.segments.add(out)
        self.records += rows.num_rows
        # Raw (young) rows' tombstones expire once compacted: the output's next horizon is the
        # earliest of the compacted ones.
        self.next_horizon = _least(
            self.next_horizon, pc.min(pc.filter(horizons, pa.array(tombstone & ~raw))).as_py()
        )
        raw_rows = out.filter(pa.array(raw))
        self.dirty_bytes += int(record_sizes(raw_rows).sum())
        # KIP-354's clock starts at the earliest young raw row (the rows before it wait for
        # it, not for their own age), else at the earliest raw one.
        timestamps = raw_rows.column("timestamp").to_pylist()
        plan = self.plan
        young = [t for t in timestamps if is_young(t, plan.now_ms, plan.min_compaction_lag_ms)]
        self.first_young = _least(self.first_young, min(young, default=None))
        self.first_raw = _least(self.first_raw, min(timestamps, default=None))

    def finish(self) -> dict[str, Any]:
        """The partition's result row (:data:`_RESULT`)."""
        plan = self.plan
        if self.failed is None:
            try:
                return self._finish()
            except (OSError, MemoryError):
                raise
            except Exception as e:  # as in add
                self.failed = _failure("closing its last segment", e)
        return {"topic": plan.topic, "partition": plan.partition, "failed": self.failed}

    def _finish(self) -> dict[str, Any]:
        written = self.segments.close()
        plan = self.plan
        return {
            "topic": plan.topic,
            "partition": plan.partition,
            "bytes": sum(w.size for w in written),
            "segments": len(written),
            "records": self.records,
            "next_horizon": self.next_horizon,
            "dirty_bytes": self.dirty_bytes,
            "first_dirty": self.first_raw if self.first_young is None else self.first_young,
            "files": json.dumps([[f.name, f.size, f.crc32c] for f in self.directory.files]),
        }


def _failure(what: str, e: Exception) -> str:
    reason = " ".join(f"{type(e).__name__}: {e}".split())
    return f"{OUTPUT_NOT_WRITTEN} ({what}): {reason}"


def write_partitions(
    batches: Iterator[pa.RecordBatch], plans: Mapping[tuple[str, int], Plan]
) -> Iterator[pa.RecordBatch]:
    """Each partition's result row, from its rows sorted by (topic, partition, offset) and
    coming in batches that may hold the end of one partition and the start of the next."""
    writer: PlanWriter | None = None
    for batch in batches:
        for run in _runs(pa.Table.from_batches([batch])):
            tp = (run.column("topic")[0].as_py(), run.column("partition")[0].as_py())
            if writer is None or (writer.plan.topic, writer.plan.partition) != tp:
                if writer is not None:
                    yield _result(writer.finish())
                writer = PlanWriter(plans[tp])
            writer.add(run)
    if writer is not None:
        yield _result(writer.finish())


def write_pinned(
    ids: Iterator[pa.RecordBatch],
    groups: Sequence[Sequence[Plan]],
    state: Pinned,
    young: Pinned,
    memory: str,
) -> Iterator[pa.RecordBatch]:
    """The result row of each plan of each group whose index is in ``ids`` (the ``id`` of
    ``spark.range``), a group's rows read here by delta-rs from the pinned versions in one
    query, in (topic, partition, offset) order, sorted in ``memory`` (beyond it, spilled under
    Spark's directory for the task's files). When DataFusion cannot read a group's rows, each of
    its plans not written yet has ``unread`` (why) on its row instead; what was written of it is
    left in the plan's version directory, which is never published."""
    schema = _arrow(T.StructType([*RECORD_FIELDS, T.StructField("raw", T.BooleanType())]))
    state_table, young_table = state.open(), young.open()
    spill = SparkFiles.getRootDirectory()
    for batch in ids:
        for i in batch.column("id").to_pylist():
            group = {(p.topic, p.partition): p for p in groups[i]}
            log_rows = partitions_log(
                state_table, young_table, list(group), _ROW_COLUMNS, memory=memory, spill=spill
            )
            # DataFusion's own types (string views) and column order, as the writer takes them.
            rows = (
                cast
                for b in log_rows
                for cast in pa.Table.from_batches([b])
                .select(schema.names)
                .cast(schema)
                .to_batches()
            )
            written: set[tuple[str, int]] = set()
            try:
                for result in write_partitions(rows, group):
                    row = result.to_pylist()[0]
                    written.add((row["topic"], row["partition"]))
                    yield result
            except SortError as e:
                for tp in group.keys() - written:
                    unread = f"{tp[0]}-{tp[1]}: {e}"
                    yield _result({"topic": tp[0], "partition": tp[1], "unread": unread})
                continue
            for tp, plan in group.items():
                if tp not in written:  # no row left: the log end offset alone
                    yield _result(PlanWriter(plan).finish())


def groups(plans: Sequence[Plan], tasks: int) -> list[list[Plan]]:
    """``plans`` in up to about ``tasks`` groups of consecutive partitions of like bytes, each
    written by one task (a partition bigger than a group's share alone): a task, two table
    opens and a query per small partition would cost more than its rows."""
    weight = [p.read_bytes + _TASK_FIXED_BYTES for p in plans]
    share = max(1, -(-sum(weight) // max(1, tasks)))
    out: list[list[Plan]] = []
    size = 0
    for plan, w in sorted(
        zip(plans, weight, strict=True), key=lambda x: (x[0].topic, x[0].partition)
    ):
        if not out or size + w > share:
            out.append([])
            size = 0
        out[-1].append(plan)
        size += w
    return out


def _runs(rows: pa.Table) -> Iterator[pa.Table]:
    """The slices of ``rows`` with one (topic, partition) each; rows are grouped by it."""
    topic, partition = rows.column("topic"), rows.column("partition")
    changed = pc.or_(
        pc.not_equal(topic[1:], topic[:-1]), pc.not_equal(partition[1:], partition[:-1])
    )
    bounds = [0, *(np.flatnonzero(changed.to_numpy(zero_copy_only=False)) + 1), rows.num_rows]
    for start, stop in pairwise(bounds):
        if stop > start:
            yield rows.slice(start, stop - start)


def _result(result: dict[str, Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([result], schema=_arrow(_RESULT))


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _millis(column: pa.ChunkedArray) -> pa.Array:
    """A timestamp column as epoch milliseconds (int64)."""
    unit = pa.timestamp("ms", tz="UTC")
    return column.combine_chunks().cast(unit, safe=False).cast(pa.int64())


class Materializer:
    def __init__(
        self,
        spark: SparkSession,
        config: CompactorConfig,
        tables: Tables,
        clock: Clock,
    ) -> None:
        self.spark = spark
        self.config = config
        self.tables = tables
        self.clock = clock
        self.output = Output(config.output.path, config.storage)
        self.written: set[tuple[str, int]] = set()  # every partition this one materialised
        # Every partition whose output this one could not write (and why): marked uncleanable.
        self.failed: dict[tuple[str, int], str] = {}
        # The uncleanable partitions (and why) as the last plan read them: Kafka's cleaner
        # skips them too.
        self.uncleanable: dict[tuple[str, int], str] | None = None
        # Kafka's cleaner-recopy-percent of the last run that wrote: bytes written, bytes read.
        self.last_recopy: tuple[int, int] | None = None

    def plans(
        self,
        *,
        topic: str | None = None,
        partition: int | None = None,
        force: bool = False,
        erase: Collection[tuple[str, int]] = (),
    ) -> list[Plan]:
        """The partitions due now (or all selected ones with ``force``, and those an erasure
        round needs re-materialised, ``erase``), healthy ones only."""
        now = self.clock.now_ms()
        where = pc.scalar(True)
        if topic is not None:
            where = where & (pc.field("topic") == topic)
        if partition is not None:
            where = where & (pc.field("partition") == partition)
        plans = []
        self.uncleanable = {}
        published: dict[tuple[str, int], int] | None = None
        for r in self.tables.partitions.reader(self.spark).arrow(where=where).to_pylist():
            tp = (r["topic"], r["partition"])
            if r["uncleanable_reason"] is not None:
                self.uncleanable[tp] = r["uncleanable_reason"]
                continue  # not even when forced: its input is damaged
            cfg = self.config.topic(r["topic"])
            reasons = [str(x) for x in decision(r, self.config, now).reasons]
            if force:
                reasons.append(str(Reason.FORCED))
            if tp in erase:
                reasons.append(str(Reason.DELETION_SLA))
            if not reasons:
                continue
            # A crashed attempt may have published a version the table does not know yet.
            if published is None:
                published = self.output.published_versions()
            version = max(r["materialized_version"] or 0, published.get(tp, 0)) + 1
            plans.append(
                Plan(
                    *tp,
                    version,
                    r["log_start_offset"],
                    r["log_end_offset"],
                    _codec(cfg.compression_type, r["compression"]),
                    cfg.segment_bytes,
                    cfg.index_interval_bytes,
                    self.config.output.path,
                    self.config.storage,
                    new_version_directory(*tp, version),
                    tuple(reasons),
                    cfg.tombstone_mode is TombstoneMode.ATTRIBUTE,
                    now,
                    cfg.min_compaction_lag_ms,
                    r["clean_bytes"] + r["dirty_bytes"],
                )
            )
        return plans

    def run(
        self,
        *,
        topic: str | None = None,
        partition: int | None = None,
        force: bool = False,
        erase: Collection[tuple[str, int]] = (),
    ) -> list[dict[str, Any]]:
        """Materialise what is due; one result dict per partition written."""
        plans = self.plans(topic=topic, partition=partition, force=force, erase=erase)
        if not plans:
            return []
        with timed(log, f"materialise {len(plans)} partitions: write"):
            plans, results = self._write(plans)
        failed = {k: r["failed"] for k, r in results.items() if r.get("failed") is not None}
        if failed:
            # Never published (its version directory is left, as an unread one's); the others
            # go on.
            log.warning("materialisation failed, partitions marked uncleanable: %s", failed)
            self._mark_uncleanable(failed)
            self.failed.update(failed)
            plans = [p for p in plans if (p.topic, p.partition) not in failed]
        by_tp = {(p.topic, p.partition): p for p in plans}
        for key, plan in by_tp.items():
            if key not in results:  # no record left: the log end offset alone
                results[key] = PlanWriter(plan).finish()
        now = self.clock.now_ms()

        def publish(plan: Plan) -> dict[str, Any]:
            result = results[(plan.topic, plan.partition)]
            published = Publication(
                plan.topic, plan.partition, plan.version, plan.directory, _files(result)
            )
            self.output.publish(published)
            # Versions left behind are retried by the erasure round that needs them gone.
            left = self.output.remove_superseded(plan.topic, plan.partition, published)
            return {
                **result,
                "version": plan.version,
                "reasons": list(plan.reasons),
                "left_behind": left,
            }

        # Partitions publish apart (each its own manifest and links): an object store's
        # round trips overlap.
        with timed(log, "materialise: publish"), ThreadPoolExecutor(_PUBLISHERS) as pool:
            out = list(pool.map(publish, by_tp.values()))
        with timed(log, "materialise: record"):
            self._record(out, now)
        self.written.update(by_tp)
        self.last_recopy = (sum(r["bytes"] for r in out), sum(p.read_bytes for p in plans))
        return out

    def _write(
        self, plans: Sequence[Plan]
    ) -> tuple[list[Plan], dict[tuple[str, int], dict[str, Any]]]:
        """The plans as written and each one's result row, its partition written on an
        executor: read there by delta-rs (one task per partition, no shuffle, nothing through
        the JVM) where delta-rs opens both tables, else by Spark. A partition delta-rs could
        not read (DataFusion's sort out of memory, a feature delta-rs lacks) is written again,
        read by Spark, in a fresh version directory."""
        state, young = (
            self.tables.state.reader(self.spark).pinned(),
            self.tables.young.reader(self.spark).pinned(),
        )
        if state is None or young is None:
            return list(plans), self._write_from_spark(plans)
        memory = SORT_MEMORY
        # Two groups a core: a straggler's share stays small.
        grouped = groups(plans, 2 * self.spark.sparkContext.defaultParallelism)
        written = self.spark.range(0, len(grouped), 1, len(grouped)).mapInArrow(
            lambda ids: write_pinned(ids, grouped, state, young, memory), _RESULT
        )
        results = {(r.topic, r.partition): r.asDict() for r in written.collect()}
        done, again = [], []
        for plan in plans:
            key = (plan.topic, plan.partition)
            if results[key]["unread"] is None:
                done.append(plan)
                continue
            unread = results.pop(key)["unread"]  # Spark's row, if any record is left
            log.warning("delta-rs could not read a due partition, Spark does: %s", unread)
            version = new_version_directory(plan.topic, plan.partition, plan.version)
            again.append(dataclasses.replace(plan, directory=version))
        if again:
            results.update(self._write_from_spark(again))
        return done + again, results

    def _write_from_spark(self, plans: Sequence[Plan]) -> dict[tuple[str, int], dict[str, Any]]:
        by_tp = {(p.topic, p.partition): p for p in plans}
        # A filter, not a join: Delta reads only the due partitions' files.
        due = of_partitions(by_tp)
        state = self.tables.state.read(self.spark).where(due)
        young = self.tables.young.read(self.spark).where(due)
        rows = state.select(*_ROW_COLUMNS, F.lit(False).alias("raw")).unionByName(
            young.select(*_ROW_COLUMNS, F.lit(True).alias("raw"))
        )
        # Each partition's rows reach one task in offset order, a batch at a time: a Python
        # worker holds about a slice of them, however large the partition (Spark's sort spills).
        ordered = rows.repartition("topic", "partition").sortWithinPartitions(
            "topic", "partition", "offset"
        )
        written = ordered.mapInArrow(lambda batches: write_partitions(batches, by_tp), _RESULT)
        return {(r.topic, r.partition): r.asDict() for r in written.collect()}

    def _mark_uncleanable(self, failed: Mapping[tuple[str, int], str]) -> None:
        now = at_ms(self.clock.now_ms())
        source = local_rows(
            [(t, p, reason, now) for (t, p), reason in failed.items()],
            "topic string, partition int, reason string, now timestamp",
        )
        self.tables.partitions.merge_rows(self.spark, source, _UNCLEANABLE)

    def _record(self, results: list[dict[str, Any]], now: int) -> None:
        at = at_ms(now)

        def stamp(ms: int | None) -> Any:
            return None if ms is None else at_ms(ms)

        source = local_rows(
            [
                (
                    r["topic"],
                    r["partition"],
                    r["version"],
                    r["dirty_bytes"],
                    max(r["bytes"] - r["dirty_bytes"], 0),
                    stamp(r["first_dirty"]),
                    # Young rows were written raw: they stay dirty, their clock keeps running.
                    None if r["first_dirty"] is None else at,
                    stamp(r["next_horizon"]),
                    at,
                )
                for r in results
            ],
            "topic string, partition int, version long, dirty_bytes long, clean_bytes long, "
            "first_dirty timestamp, first_dirty_at timestamp, next_horizon timestamp, "
            "now timestamp",
        )
        self.tables.partitions.merge_rows(self.spark, source, _PUBLISHED)


# A partition whose materialisation failed on its input: the first reason stays.
_UNCLEANABLE = RowsMerge(
    BY_PARTITION,
    update={
        "uncleanable_reason": "coalesce(t.uncleanable_reason, s.reason)",
        "updated_at": "s.now",
    },
)
# What a materialisation published (``_record``'s rows).
_PUBLISHED = RowsMerge(
    BY_PARTITION,
    update={
        "dirty_bytes": "s.dirty_bytes",
        "clean_bytes": "s.clean_bytes",
        "first_dirty_timestamp": "s.first_dirty",
        "first_dirty_appended_at": "s.first_dirty_at",
        "last_materialized_at": "s.now",
        "materialized_version": "s.version",
        "materialized_log_start": "t.log_start_offset",
        "output_next_horizon": "s.next_horizon",
        "updated_at": "s.now",
    },
)


def _files(result: dict[str, Any]) -> tuple[OutputFile, ...]:
    return tuple(
        OutputFile(str(n), int(size), int(crc)) for n, size, crc in json.loads(result["files"])
    )


def _arrow(schema: T.StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")
