"""The ``kafka-segments`` data source: Kafka segment files as a Spark (streaming) DataFrame.

Usage (installing segcompact registers the source in every session, through the
``pyspark_segcompact`` package Spark looks up; :func:`register` does it by hand where that
lookup cannot see the package)::

    df = (spark.readStream.format("kafka-segments")
          .option("paths", "/data/kafka-logs,/mnt/archive")   # or .load("/data/kafka-logs")
          .option("rolledOnly", "true")
          .option("maxSegmentsPerTrigger", "100")
          .option("manifest", "/data/checkpoints/segments/manifest")  # beside its checkpoint
          .load())

Options (names are case-insensitive, as for every Spark source):

- ``paths``: comma-separated roots in Kafka log-dir layout (a JSON array also works, which is
  what ``load([...])`` passes); ``path`` (from ``load(path)``) is added to them.
- ``rolledOnly`` [true]: leave out the active (highest) segment of each partition directory.
- ``summaries`` [false]: also one summary row per segment (below); without it, records only.
- ``manifest``: the directory of the segment manifest (see :mod:`segcompact.manifest`),
  required by a streaming read (a batch read keeps none): one per query, beside its
  checkpoint, as the compactor's job keeps it. Nothing is made in a directory the query did not
  name. A relative path resolves against the directory the Spark session was started from (the
  JVM's). Earlier versions kept it in ``checkpoints/kafka-segments/<16 hex digits>/`` there
  unless named: name that directory (the one with the hex name) to resume such a query.
  Deleting the manifest of a query whose checkpoint is kept is detected and refused.
- ``maxSegmentsPerTrigger``: at most this many segments per micro-batch (``ReadMaxFiles``).
- ``chunkRecords`` [65536], ``chunkBytes`` [33554432]: the size of the Arrow batches a segment
  is decoded into (bounded memory per task), however many records one Kafka batch holds; with
  ``compaction``, a round of the reduction takes at most 256 chunks of records.
- ``maxPartitionBytes`` [134217728]: small segments of a micro-batch share a Spark task up to
  this many bytes; a larger segment has a task of its own.
- ``maxReducedBytes`` [1073741824]: with ``compaction``, a partition's consecutive segments of
  a micro-batch stay in one task (reduced together: no shuffle in the merge) up to this many
  bytes, though more than ``maxPartitionBytes``.
- ``compaction``: reduce a partition's segments inside their task to what compaction can use
  (:mod:`segcompact.compaction.reduce`): per key only the records that can still win under
  the topic's strategy, whatever the log start; every transactional, control, keyless or
  unreadable-version record and every record of a topic with ``min.compaction.lag.ms`` as it
  is; each classified under its topic's rules (``order_value``, ``bad_version``,
  ``tombstone``). The value is the JSON of :class:`~segcompact.compaction.rules.Rankings` (the
  compactor sets it); without it, every record comes out (the plain record stream), and those
  three columns are null (the topics' rules are not known).
- ``stateFiles``: with ``compaction`` and ``summaries``, where a batch may leave a filing
  (:mod:`segcompact.spark.state_files`, the compactor's job does): while one is there, a task
  writes the winners of the partitions it takes into the state table's own files (one per
  topic), which it names on its last summary row (``state_file``, a JSON array) in place of
  their rows; without one, the rows come out as always.
- ``fs.*``: Hadoop storage settings for roots and manifest on an object store, as Spark takes
  them without ``spark.hadoop.`` (``fs.s3a.endpoint``, ``fs.s3a.access.key``, …); the standard
  environment credentials otherwise. Roots and manifest may be local paths or URIs
  (``s3a://``, ``abfss://``, ``gs://``; see :mod:`segcompact.storage`).

One row per record with the columns of :data:`segcompact.format.arrow.SCHEMA` (Spark Kafka
source names and types for the shared ones), then ``order_value`` (the record's version under
the header strategy, null without a readable one), ``bad_version`` (its version header is
there but unreadable) and ``tombstone`` (it deletes its key), with ``compaction`` (else null;
on a control record: null, false, false), then ``segment`` (the file), ``segment_base``,
``segment_end``, ``segment_bytes``, ``error``, ``folded_records``, ``one_per_key``,
``reduced_segments`` and ``state_file`` (on a record: its segment's base, ``segment_end``
false, the others null).
With ``summaries``, after a segment's records comes one summary row (``segment_end`` true):
``offset`` and ``batch_last_offset`` are the segment's last offset (-1 when it has no batch),
``batch_base_offset`` its base offset (from the file name), ``segment_bytes`` the bytes read as
valid, ``error`` a one-line reason when the segment is corrupt or gone; key, value and the
three rules' columns are null, headers empty, timestamp the epoch, and the other numeric
columns -1 (``attributes``, ``is_transactional`` and ``is_control`` 0 / false).

With ``compaction``, a task's consecutive segments of one partition are reduced together, as
one log, and their summary rows come after all of their records: ``reduced_segments`` says how
many were, ``one_per_key`` whether at most one candidate per key came out of them, and the last
one's ``folded_records`` counts the records the reduction left out (the others' 0) and its
``timestamp`` is the earliest of the candidates' (these three are null without ``compaction``).
A corrupt segment yields its good records and the summary row and does not fail the query.

Offsets are ``{"seq": N, "manifest": "<id>"}``: the first N entries of that manifest (no id
before the first segment). Progress lives in the query's checkpoint; the manifest keeps the seq
of every segment stable across restarts, and its id lets a restart refuse a manifest that was
deleted or replaced while the checkpoint was kept.
"""

from __future__ import annotations

import functools
import json
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from segcompact.compaction.reduce import SegmentReducer
from segcompact.compaction.rules import RULE_FIELDS, Rankings
from segcompact.discovery import discover
from segcompact.errors import ConfigError, CorruptBatchError
from segcompact.format.arrow import SCHEMA, Selection, decode_segment
from segcompact.format.segment import SegmentReader
from segcompact.manifest import Manifest, ManifestEntry, offset_of
from segcompact.spark.state_files import Filing, StateFile, name_files, read_filing
from segcompact.storage import Storage
from segcompact.storage.settings import scheme_of

NAME = "kafka-segments"
DEFAULT_CHUNK_RECORDS = 1 << 16
DEFAULT_CHUNK_BYTES = 32 << 20
DEFAULT_MAX_PARTITION_BYTES = 128 << 20  # as spark.sql.files.maxPartitionBytes
DEFAULT_MAX_REDUCED_BYTES = 1 << 30  # Kafka's default segment size

# Spark's Kafka source makes every column nullable; so does this one (summary rows need it).
SPARK_SCHEMA = StructType(
    [StructField(f.name, from_arrow_type(f.type), nullable=True) for f in SCHEMA]
    # Per data record, with ``compaction``: its rules' columns (``compaction.rules.classify``).
    + [StructField(f.name, from_arrow_type(f.type), nullable=True) for f in RULE_FIELDS]
    + [
        StructField("segment", StringType()),  # the file, on its summary row only
        StructField("segment_base", LongType()),  # base offset of the row's segment
        StructField("segment_end", BooleanType()),
        StructField("segment_bytes", LongType()),
        StructField("error", StringType()),
        StructField("folded_records", LongType()),  # on a summary row, with ``compaction``
        StructField("one_per_key", BooleanType()),  # on a summary row, with ``compaction``
        StructField("reduced_segments", LongType()),  # on a summary row, with ``compaction``
        StructField("state_file", StringType()),  # on a summary row, with ``stateFiles``
    ]
)


@functools.cache
def _arrow_schema() -> pa.Schema:
    # Exactly what PySpark checks yielded batches against.
    return to_arrow_schema(SPARK_SCHEMA, timezone="UTC")


# --- options --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """The source's options, parsed and checked."""

    roots: tuple[str, ...]
    rolled_only: bool
    manifest: str | None  # a streaming read's; a batch read keeps none
    max_segments_per_trigger: int | None
    chunk_records: int
    chunk_bytes: int
    max_partition_bytes: int
    max_reduced_bytes: int = DEFAULT_MAX_REDUCED_BYTES
    storage: Storage = field(default_factory=Storage)
    rankings: Rankings | None = None  # the ``compaction`` option: reduce in the task
    summaries: bool = False  # a summary row per segment after the records
    state_files: str | None = None  # where a batch's filing may be (``state_files``)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> SourceOptions:
        opts = {k.lower(): v for k, v in options.items()}
        roots = _roots(opts)
        rolled_only = _bool(opts, "rolledOnly", True)
        manifest = opts.get("manifest")
        return cls(
            roots=roots,
            rolled_only=rolled_only,
            manifest=_absolute(manifest) if manifest else None,
            max_segments_per_trigger=_positive(opts, "maxSegmentsPerTrigger"),
            chunk_records=_positive(opts, "chunkRecords") or DEFAULT_CHUNK_RECORDS,
            chunk_bytes=_positive(opts, "chunkBytes") or DEFAULT_CHUNK_BYTES,
            max_partition_bytes=_positive(opts, "maxPartitionBytes") or DEFAULT_MAX_PARTITION_BYTES,
            max_reduced_bytes=_positive(opts, "maxReducedBytes") or DEFAULT_MAX_REDUCED_BYTES,
            storage=Storage({k: v for k, v in opts.items() if k.startswith("fs.")}),
            rankings=_rankings(opts),
            summaries=_bool(opts, "summaries", False),
            state_files=opts.get("statefiles") or None,
        )

    def tasks(self, segments: Iterable[ManifestEntry]) -> list[SegmentTask]:
        """The Spark tasks that read these segments (:func:`pack`)."""
        together = self.max_reduced_bytes if self.rankings is not None else 0
        return pack(segments, self.max_partition_bytes, together)


def _absolute(location: str) -> str:
    """A local path made absolute (against the driver's working directory); a URI as it is."""
    return location if scheme_of(location) else os.path.abspath(location)


def _roots(opts: Mapping[str, str]) -> tuple[str, ...]:
    raw: list[str] = []
    paths = (opts.get("paths") or "").strip()
    if paths.startswith("["):
        try:
            raw.extend(str(p) for p in json.loads(paths))
        except ValueError:
            raise ConfigError(f"option paths: not a JSON array of strings: {paths}") from None
    else:
        raw.extend(paths.split(","))
    raw.append(opts.get("path") or "")
    roots = tuple(dict.fromkeys(_absolute(p.strip()) for p in raw if p.strip()))
    if not roots:
        raise ConfigError(
            f"{NAME}: no source root; set option paths (comma-separated) or call load(path)"
        )
    return roots


def _rankings(opts: Mapping[str, str]) -> Rankings | None:
    value = opts.get("compaction")
    if value is None:
        return None
    try:
        return Rankings.from_json(value)
    except ValueError as e:
        raise ConfigError(f"option compaction: {e}") from None


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"option {name}: {value!r} is not allowed (true or false)")


def _positive(opts: Mapping[str, str], name: str) -> int | None:
    value = opts.get(name.lower())
    if value is None or not value.strip():
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"option {name}: {value!r} is not allowed (a positive integer)")
    return number


# --- partitions and reading -----------------------------------------------------------------


@dataclass(frozen=True)
class SegmentTask(InputPartition):
    """A Spark task: one segment, or several of the same micro-batch together (:func:`pack`).

    Packing small segments (tiered-storage copies, tests, a freshly rolled log) spares a task's
    start-up per file; keeping a partition's consecutive segments together lets them be reduced
    as one log, with no shuffle in the merge.
    """

    segments: tuple[ManifestEntry, ...]


def pack(
    segments: Iterable[ManifestEntry], max_bytes: int, max_together: int = 0
) -> list[SegmentTask]:
    """Consecutive segments grouped up to ``max_bytes`` a task (a bigger one goes alone); a
    partition's consecutive segments in rising order (:func:`runs`) stay together up to
    ``max_together`` bytes, though more than ``max_bytes``."""
    tasks: list[SegmentTask] = []
    group: list[ManifestEntry] = []
    size = 0
    for run in runs(segments, reduced=max_together > 0):
        for part in _split(run, max(max_bytes, max_together)):
            part_size = sum(e.file.size for e in part)
            if group and size + part_size > max_bytes:
                tasks.append(SegmentTask(tuple(group)))
                group, size = [], 0
            group.extend(part)
            size += part_size
    if group:
        tasks.append(SegmentTask(tuple(group)))
    return tasks


def _split(run: list[ManifestEntry], max_bytes: int) -> Iterator[list[ManifestEntry]]:
    """``run`` in consecutive parts of up to ``max_bytes`` (a bigger segment alone)."""
    part: list[ManifestEntry] = []
    size = 0
    for entry in run:
        if part and size + entry.file.size > max_bytes:
            yield part
            part, size = [], 0
        part.append(entry)
        size += entry.file.size
    if part:
        yield part


def read_task(task: InputPartition, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    if not isinstance(task, SegmentTask):
        return  # Spark's placeholder partition when nothing was found
    filing = _filing(options)
    files: dict[str, StateFile] = {}  # per topic, the file of the winners the filing takes

    def read() -> Iterator[pa.RecordBatch]:
        for run in runs(task.segments, reduced=options.rankings is not None):
            first = run[0].file
            state_file = None
            # The filing takes only topics a task reduces to one record per key (by offset),
            # which go straight to the state.
            if filing is not None and filing.takes(first.topic, first.partition):
                state_file = files.get(first.topic)
                if state_file is None:
                    state_file = StateFile(filing, options.storage, first.topic)
                    files[first.topic] = state_file
            yield from read_segments(
                run,
                chunk_records=options.chunk_records,
                chunk_bytes=options.chunk_bytes,
                storage=options.storage,
                rankings=options.rankings,
                summaries=options.summaries,
                state_file=state_file,
            )

    yield from read() if filing is None else _naming(read(), files)


def _filing(options: SourceOptions) -> Filing | None:
    """The batch's filing, if the source takes one and the batch left it."""
    if options.state_files is None or options.rankings is None or not options.summaries:
        return None
    return read_filing(options.state_files, options.storage)


def _naming(
    rows: Iterator[pa.RecordBatch], files: Mapping[str, StateFile]
) -> Iterator[pa.RecordBatch]:
    """``rows`` with the files of the task's winners named on its last summary row (thrown
    away if the task fails: a retry writes others)."""
    try:
        last: pa.RecordBatch | None = None
        for batch in rows:  # each as it comes but a summary row, until the next batch
            if last is not None:
                yield last
            summary = batch.num_rows == 1 and batch.column("segment_end")[0].as_py()
            last = batch if summary else None
            if not summary:
                yield batch
        filed = [f for f in (state_file.finish() for state_file in files.values()) if f]
    except BaseException:
        for state_file in files.values():
            state_file.discard()
        raise
    if last is not None:
        named = pa.array([name_files(filed)], pa.string())
        at = last.schema.get_field_index("state_file")
        yield last.set_column(at, last.schema.field(at), named)


def runs(segments: Iterable[ManifestEntry], *, reduced: bool) -> list[list[ManifestEntry]]:
    """A task's segments in the groups read together: when ``reduced``, the consecutive
    segments of one partition in rising base offsets (reduced as one log); else one each."""
    groups: list[list[ManifestEntry]] = []
    for entry in segments:
        last = groups[-1][-1].file if groups and reduced else None
        if (
            last is not None
            and (last.topic, last.partition) == (entry.file.topic, entry.file.partition)
            and entry.file.base_offset > last.base_offset
        ):
            groups[-1].append(entry)
        else:
            groups.append([entry])
    return groups


def read_segments(
    parts: Sequence[ManifestEntry],
    *,
    chunk_records: int,
    chunk_bytes: int,
    storage: Storage,
    rankings: Rankings | None = None,
    summaries: bool = True,
    state_file: StateFile | None = None,
) -> Iterator[pa.RecordBatch]:
    """The records of one partition's consecutive segments as Arrow batches (reduced together
    under ``rankings``, if given, as one log), then, if ``summaries``, a summary row per segment.

    Corruption, a vanished file and one that cannot be read (no permission, not a file) end up
    in that segment's summary row's ``error`` and the next segment is read; other I/O errors
    raise, so Spark retries the task instead of recording a transient failure for good. Any
    other exception the partition's records raise (in the decoder or the reduction: a case no
    check foresaw) ends up in the ``error`` of that segment and of the partition's later
    segments of the task, which are not read: the partition is marked uncleanable instead of
    failing the task, and with it every partition of the micro-batch.
    """
    reducer = None
    if rankings is not None:
        # Eight chunks (256 MiB by default: the fronts of about 1.5 M keys; Kafka's dedupe
        # buffer is 128 MiB of 24-byte entries): the fronts' rows are held while they take up
        # to a quarter of it (and the rows held, up to three eighths), else the segments are
        # read twice.
        # A round takes at most 256 chunks of records (16 M by default: a flag each on the
        # fronts), however tiny they are.
        # Past a chunk's bytes, keys first (most records of a compacted log lose: their values
        # are then never built), at the cost of reading the files twice.
        ranking = rankings.for_topic(parts[0].file.topic)
        reducer = SegmentReducer(
            ranking,
            budget_bytes=8 * chunk_bytes,
            budget_records=256 * chunk_records,
            keys_first=not ranking.lagged and sum(p.file.size for p in parts) > chunk_bytes,
        )
    keys_first = reducer is not None and reducer.rescan

    def open_reader(part: ManifestEntry) -> SegmentReader:
        fs, path = storage.resolve(part.file.path)
        _count_decode(part)
        return SegmentReader(fs.input_file(path))

    def chunks(
        reader: SegmentReader, part: ManifestEntry, select: Selection | None = None
    ) -> Iterator[pa.RecordBatch]:
        base = pa.scalar(part.file.base_offset, pa.int64())
        light = keys_first and select is None
        for chunk in decode_segment(
            reader,
            part.file.topic,
            part.file.partition,
            chunk_records=chunk_records,
            chunk_bytes=chunk_bytes,
            # The first pass of a log read keys first builds what ranks records only.
            values=not light,
            headers=not light or (reducer is not None and reducer.headers),
            select=select,
        ):
            # Rows keep their segment's base through the reduction.
            yield chunk.append_column("segment_base", pa.repeat(base, chunk.num_rows))

    def records(rows: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        if state_file is not None:
            rows = state_file.take(rows)  # the winners into the state's file
            if not rows.num_rows:
                return
        yield _records(rows)

    ends: list[tuple[int, int, str | None]] = []  # per segment: last offset, bytes, error
    counts: list[int] = []  # per segment: the records the first pass read
    for i, part in enumerate(parts):
        read = 0
        failure: str | None = None
        reader: SegmentReader | None = None
        reducing: pa.RecordBatch | None = None  # to say where the reduction failed
        try:
            reader = open_reader(part)
            for chunk in chunks(reader, part):
                read += chunk.num_rows
                reducing = chunk
                for rows in [chunk] if reducer is None else reducer.add(chunk):
                    yield from records(rows)
                reducing = None
        except CorruptBatchError as e:
            failure = _describe(e, part.file.path)  # the good records before it still count
        except _UNREADABLE as e:
            failure = _unreadable(part, e)
            reader = None
        except (OSError, MemoryError):
            raise  # maybe transient: Spark retries the task
        except Exception as e:  # one partition's data fails that partition only
            # Nothing more of the partition is read in this task.
            failure = _unforeseen(e, part, reader, reducing)
            if reducer is None:  # the records before it left the task: they stand
                last = (-1, 0) if reader is None else (reader.last_offset, reader.valid_bytes)
                ends += [(*last, failure)] + [(-1, 0, failure)] * (len(parts) - i - 1)
                first = i  # the earlier segments' summaries are out (or, without, not kept)
            else:
                # The reduction held the task's earlier records too, lost with it: none of the
                # task's segments counts as read, from the first on (the partition's offsets
                # and its unread data start there).
                if i:
                    failure = f"{parts[0].file.path}: reduced with a later segment that failed: "
                    failure += _unforeseen(e, part, reader, reducing)
                unread: tuple[int, int, str | None] = (-1, 0, failure)
                ends, first = [unread] * len(parts), 0
            for rest, end in zip(parts[first:], ends, strict=True) if summaries else ():
                yield _summary(rest, *end)
            return
        if reader is None:
            ends.append((-1, 0, failure))
        else:
            ends.append((reader.last_offset, reader.valid_bytes, failure))
        counts.append(read)
        if reducer is None and summaries:  # the plain stream: each right after its records
            yield _summary(part, *ends.pop())
    if reducer is not None:
        try:
            for rows in reducer.finish():
                yield from records(rows)
            if reducer.rescan:  # up to the records the first pass saw, segment by segment
                first = 0
                for i, (part, count) in enumerate(zip(parts, counts, strict=True)):
                    select = reducer.select(first, count)
                    first += count
                    try:
                        for rows in chunks(open_reader(part), part, select) if count else ():
                            yield from records(reducer.leave(rows))
                    except CorruptBatchError:
                        pass  # where the first pass stopped too
                    except _UNREADABLE as e:
                        ends[i] = (-1, 0, _unreadable(part, e))
                    # What cannot be read again leaves nothing (nor is the run then one per key).
                    reducer.done(select)
        except (OSError, MemoryError):
            raise
        except Exception as e:  # as in the first pass
            failure = _unforeseen(e, parts[-1], None, None)
            ends = [(last, valid, error or failure) for last, valid, error in ends]
            reducer = None  # its figures are not to be trusted
        for i, (part, end) in enumerate(zip(parts, ends, strict=True) if summaries else ()):
            yield _summary(part, *end, reducer, together=len(parts), figures=i == len(parts) - 1)


# Where this names a directory, each decode of a segment leaves an empty file there, named
# ``<topic>-<partition>-<base offset>.<random>``: how tests count decodes across Python workers.
# Unset, it costs a look-up per segment read.
DECODES_VARIABLE = "SEGCOMPACT_DECODES_DIR"


def _count_decode(part: ManifestEntry) -> None:
    where = os.environ.get(DECODES_VARIABLE)
    if where:
        name = f"{part.file.topic}-{part.file.partition}-{part.file.base_offset}"
        with open(os.path.join(where, f"{name}.{uuid.uuid4().hex}"), "x"):
            pass


# What no retry mends: the partition is reported, not the task failed (nor, after Spark's
# retries, the query, which would fail again at every restart).
_UNREADABLE = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)


def _unreadable(part: ManifestEntry, e: OSError) -> str:
    if isinstance(e, FileNotFoundError):
        return f"{part.file.path}: segment file not found (deleted after discovery)"
    return f"{part.file.path}: segment file cannot be read ({e.strerror or e})"


def _unforeseen(
    e: Exception,
    part: ManifestEntry,
    reader: SegmentReader | None,
    reducing: pa.RecordBatch | None,
) -> str:
    """One line for an exception no check foresaw (the decoder turns its own into corrupt
    batches): the file, where the reader was, the records being reduced if it was the
    reduction, and the exception."""
    position = "unknown" if reader is None else str(reader.valid_bytes)
    reason = " ".join(f"{type(e).__name__}: {e}".split())
    if reducing is None or not reducing.num_rows:
        return f"{part.file.path}: unexpected error at position {position}: {reason}"
    first = reducing.column("batch_base_offset")[0].as_py()
    last = reducing.column("offset")[-1].as_py()
    return (
        f"{part.file.path}: cannot reduce the records of base offset {first} to offset {last} "
        f"(read up to position {position}): {reason}"
    )


def _describe(e: CorruptBatchError, path: str) -> str:
    """One line naming the file, the bad batch's position and base offset, and why."""
    base = "unknown" if e.base_offset is None else str(e.base_offset)
    position = "unknown" if e.position is None else str(e.position)
    reason = " ".join(str(e.reason).split())
    return f"{e.file or path}: corrupt batch at position {position}, base offset {base}: {reason}"


def _records(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Decoded rows (with their ``segment_base``, and classified if they were reduced) as the
    source's rows."""
    n = batch.num_rows
    columns = [batch.column(f.name) for f in SCHEMA]
    classified = batch.schema.get_field_index(RULE_FIELDS[0].name) >= 0
    columns += [batch.column(f.name) if classified else pa.nulls(n, f.type) for f in RULE_FIELDS]
    columns += [
        pa.nulls(n, pa.string()),
        batch.column("segment_base"),
        pa.repeat(pa.scalar(False), n),
        pa.nulls(n, pa.int64()),
        pa.nulls(n, pa.string()),
        pa.nulls(n, pa.int64()),
        pa.nulls(n, pa.bool_()),
        pa.nulls(n, pa.int64()),
        pa.nulls(n, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_arrow_schema())


def _summary(
    part: ManifestEntry,
    last: int,
    valid_bytes: int,
    error: str | None,
    reducer: SegmentReducer | None = None,
    *,
    together: int = 1,
    figures: bool = True,
) -> pa.RecordBatch:
    """The summary row of a segment, reduced by ``reducer`` (if any) with ``together - 1``
    others of its partition; the reducer's ``figures`` are on one of them (the others' say 0
    folded)."""
    earliest = reducer.earliest if reducer is not None and figures else None
    row: dict[str, Any] = {
        "key": None,
        "value": None,
        "topic": part.file.topic,
        "partition": part.file.partition,
        "offset": last,
        "timestamp": 0 if earliest is None else earliest,
        "timestampType": -1,
        "headers": [],
        "attributes": 0,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "is_transactional": False,
        "is_control": False,
        "delete_horizon": None,
        "batch_base_offset": part.file.base_offset,
        "batch_last_offset": last,
        "magic": -1,
        "compression": -1,
        **{f.name: None for f in RULE_FIELDS},
        "segment": part.file.path,
        "segment_base": part.file.base_offset,
        "segment_end": True,
        "segment_bytes": valid_bytes,
        "error": error,
        "folded_records": None if reducer is None else reducer.folded if figures else 0,
        "one_per_key": None if reducer is None else reducer.one_per_key,
        "reduced_segments": None if reducer is None else together,
        "state_file": None,
    }
    return pa.RecordBatch.from_pylist([row], schema=_arrow_schema())


# --- readers --------------------------------------------------------------------------------


def _check_schema(schema: StructType) -> None:
    if schema != SPARK_SCHEMA:
        raise ConfigError(
            f"{NAME} has a fixed schema and cannot read with a user-specified one: "
            f"{SPARK_SCHEMA.simpleString()}"
        )


class KafkaSegmentsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of whole segments, numbered by the manifest.

    ``latestOffset`` runs discovery on the driver and appends what is new to the manifest;
    ``partitions`` turns the seq range into one input partition per segment.
    """

    def __init__(self, options: SourceOptions) -> None:
        if options.manifest is None:
            raise ConfigError(
                "option manifest: a streaming read needs a directory for its segment manifest "
                "(one per query, beside its checkpoint; earlier versions kept it in "
                "./checkpoints/kafka-segments/<16 hex digits>/ of the session's directory: "
                "name that one to resume)"
            )
        self.options = options
        self.manifest = Manifest(options.manifest, options.storage)
        # Set by Trigger.AvailableNow: the last seq this run may hand out.
        self.target: int | None = None

    def initialOffset(self) -> dict[str, Any]:
        return offset_of(0)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_segments_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxFiles(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self.manifest.discover(self.options.roots, rolled_only=self.options.rolled_only)
        self.target = self.manifest.latest_seq

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        if self.target is None:
            self.manifest.discover(self.options.roots, rolled_only=self.options.rolled_only)
            available = self.manifest.latest_seq
        else:
            available = self.target  # segments found after the run started wait for the next
        start_seq = self.manifest.check(start)
        end = max(start_seq, self._admit(start_seq, available, limit))
        return offset_of(end, self.manifest.id)

    def _admit(self, start: int, available: int, limit: ReadLimit) -> int:
        if isinstance(limit, ReadMaxFiles):
            return min(available, start + max(limit.max_files, 1))
        if isinstance(limit, ReadMaxBytes):
            end, total = start, 0
            for entry in self.manifest.between(start, available):
                if end > start and total + entry.file.size > limit.max_bytes:
                    break
                end, total = entry.seq, total + entry.file.size
            return end
        # ReadAllAvailable; row-based limits cannot be known before decoding: read all.
        return available

    def reportLatestOffset(self) -> dict[str, Any]:
        self.manifest.refresh()
        return offset_of(self.manifest.latest_seq, self.manifest.id)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[SegmentTask]:
        entries = self.manifest.between(self.manifest.check(start), self.manifest.check(end))
        # The manifest takes partitions in turn; a batch reads each partition's segments
        # together, in rising offsets, to reduce them as one log.
        return self.options.tasks(sorted(entries, key=lambda e: e.file.sort_key))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_task(partition, self.options)

    def commit(self, end: dict[str, Any]) -> None:
        pass  # the manifest is append-only; Spark's checkpoint holds progress


class KafkaSegmentsBatchReader(DataSourceReader):
    """A one-off read of every eligible segment; no manifest is written."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[SegmentTask]:
        found = discover(
            self.options.roots, rolled_only=self.options.rolled_only, storage=self.options.storage
        )
        return self.options.tasks(ManifestEntry(i, s) for i, s in enumerate(found, start=1))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_task(partition, self.options)


class KafkaSegmentsDataSource(DataSource):
    """``spark.readStream.format("kafka-segments")``; see the module docstring for options."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return SPARK_SCHEMA

    def streamReader(self, schema: StructType) -> KafkaSegmentsStreamReader:
        _check_schema(schema)
        return KafkaSegmentsStreamReader(SourceOptions.from_options(self.options))

    def reader(self, schema: StructType) -> KafkaSegmentsBatchReader:
        _check_schema(schema)
        return KafkaSegmentsBatchReader(SourceOptions.from_options(self.options))


def register(spark: SparkSession) -> None:
    """Make ``format("kafka-segments")`` available in ``spark`` where Spark's own lookup of
    ``pyspark_segcompact`` does not see it (segcompact on the driver's path only)."""
    spark.dataSource.register(KafkaSegmentsDataSource)
