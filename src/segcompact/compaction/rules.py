"""The per-record rules of compaction, each in one place: which record wins, which record is a
delete, which is too young to compact.

A topic's rules as the source's task takes them are its :class:`Ranking` (the source's
``compaction`` option: :class:`Rankings`). The task classifies every data record it emits
(:func:`classify`: its version, whether that header was unreadable, whether it deletes its
key), on Arrow columns, once; nothing parses a header after it. A record's rank is built from
those stored columns, the version, timestamp and offset, under the topic's current strategy:
here (:func:`ranks`, which the C front ``_cfront.c`` compares) and in Spark
(``spark.rules.rank``). ``tests/support/model.py`` holds the scalar oracle these are tested
against.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from segcompact.config import CompactionStrategy, CompactorConfig, TombstoneMode, TopicConfig
from segcompact.format.arrow import binary_buffers
from segcompact.format.attributes import RecordAttr

TOMBSTONE_TRUE = (b"true", b"1", b"\x01")

# What :func:`classify` adds to each record: its header version (null without a readable one,
# and under any other strategy), whether the version header was there but unreadable, and
# whether the record deletes its key.
RULE_FIELDS = (
    pa.field("order_value", pa.int64()),
    pa.field("bad_version", pa.bool_()),
    pa.field("tombstone", pa.bool_()),
)


@dataclass(frozen=True, slots=True)
class Ranking:
    """What the source's task needs of a topic's rules: how its records rank, what marks a
    delete, and whether records wait for ``min.compaction.lag.ms``."""

    strategy: str = CompactionStrategy.OFFSET.value
    header: str | None = None  # the version header of the header strategy
    lagged: bool = False  # min.compaction.lag.ms > 0: every record goes to the young table
    tombstone_mode: str = TombstoneMode.NULL_VALUE.value
    tombstone_header: str | None = None  # the flag header of the header tombstone mode

    def __post_init__(self) -> None:
        """Raises ValueError naming what is wrong."""
        header = CompactionStrategy(self.strategy) is CompactionStrategy.HEADER
        if header != (self.header is not None):
            raise ValueError("a version header goes with the header strategy, and only with it")
        flagged = TombstoneMode(self.tombstone_mode) is TombstoneMode.HEADER
        if flagged != (self.tombstone_header is not None):
            raise ValueError("a tombstone header goes with the header mode, and only with it")

    @classmethod
    def of(cls, topic: TopicConfig) -> Ranking:
        header = topic.compaction_strategy is CompactionStrategy.HEADER
        flagged = topic.tombstone_mode is TombstoneMode.HEADER
        return cls(
            topic.compaction_strategy.value,
            topic.strategy_header if header else None,
            topic.min_compaction_lag_ms > 0,
            topic.tombstone_mode.value,
            topic.tombstone_header if flagged else None,
        )


@dataclass(frozen=True, slots=True)
class Rankings:
    """Every configured topic's :class:`Ranking`, and the defaults' for the others."""

    topics: Mapping[str, Ranking] = field(default_factory=dict)
    default: Ranking = Ranking()

    @classmethod
    def of(cls, config: CompactorConfig) -> Rankings:
        return cls(
            {name: Ranking.of(t) for name, t in sorted(config.topics.items())},
            Ranking.of(config.defaults),
        )

    def for_topic(self, name: str) -> Ranking:
        return self.topics.get(name, self.default)

    def to_json(self) -> str:
        return json.dumps(
            {
                "topics": {n: asdict(r) for n, r in self.topics.items()},
                "default": asdict(self.default),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Rankings:
        """Raises ValueError on anything but :meth:`to_json`'s shape."""
        try:
            raw = json.loads(text)
            topics = {str(n): Ranking(**r) for n, r in raw["topics"].items()}
            default = Ranking(**raw["default"])
        except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as e:
            raise ValueError(f"not a compaction ranking: {e}") from None
        return cls(topics, default)


def classify(chunk: pa.RecordBatch, ranking: Ranking) -> pa.RecordBatch:
    """``chunk`` (decoded records with at least the ``value``, ``headers``, ``attributes`` and
    ``is_control`` columns of ``format.arrow.SCHEMA``) with :data:`RULE_FIELDS` appended, under
    the topic's ``ranking``. A control record has no version and deletes nothing."""
    data = ~bool_column(chunk, "is_control")
    if ranking.header is not None:  # the header strategy's
        has, version, bad = header_versions(chunk.column("headers"), ranking.header)
    else:
        has, bad = np.zeros(chunk.num_rows, bool), np.zeros(chunk.num_rows, bool)
        version = np.zeros(chunk.num_rows, np.int64)
    columns = (
        pa.array(version, pa.int64(), mask=~(has & data)),
        pa.array(bad & data),
        pa.array(tombstones(chunk, ranking) & data),
    )
    for f, column in zip(RULE_FIELDS, columns, strict=True):
        chunk = chunk.append_column(f, column)
    return chunk


def ranks(chunk: pa.RecordBatch, ranking: Ranking) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per record of a classified ``chunk`` (:func:`classify`), the first two parts of its rank
    under the topic's strategy; its offset is the third. The highest rank wins: offset: the
    highest offset; timestamp: the highest timestamp (ms), then offset; header: a record with a
    version beats one without, two with: the higher version, then offset; neither: offset."""
    n = chunk.num_rows
    if ranking.strategy == CompactionStrategy.TIMESTAMP.value:
        return np.zeros(n, np.int64), int64s(chunk.column("timestamp")) // 1000  # µs → ms
    if ranking.strategy == CompactionStrategy.HEADER.value:
        version = chunk.column("order_value")
        has = version.is_valid().to_numpy(zero_copy_only=False).astype(np.int64)
        return has, int64s(pc.fill_null(version, 0))
    return np.zeros(n, np.int64), np.zeros(n, np.int64)


def header_versions(
    headers: pa.ListArray, name: str
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.bool_]]:
    """Per record: whether its last header ``name`` holds an 8-byte version, that version (a
    big-endian signed long; 0 without one), and whether the header is there but not 8 bytes
    (the record then ranks as without one, and is counted)."""
    n = len(headers)
    has, version, bad = np.zeros(n, bool), np.zeros(n, np.int64), np.zeros(n, bool)
    rows, found = _last_headers(headers, name)
    if not len(rows):
        return has, version, bad
    ok = pc.fill_null(pc.binary_length(found), -1).to_numpy(zero_copy_only=False) == 8
    bad[rows[~ok]] = True
    good = found.filter(pa.array(ok))
    if len(good):
        bounds, data, _ = binary_buffers(good)
        index = np.frombuffer(bounds, np.int32)[:-1, None].astype(np.int64) + np.arange(8)
        version[rows[ok]] = np.frombuffer(data, np.uint8)[index].copy().view(">i8").ravel()
        has[rows[ok]] = True
    return has, version, bad


def tombstones(chunk: pa.RecordBatch, ranking: Ranking) -> NDArray[np.bool_]:
    """Per record, whether it deletes its key under the topic's tombstone mode (KIP-87): a null
    value; its last header ``tombstone_header`` holding one of :data:`TOMBSTONE_TRUE`; or the
    attribute bit."""
    if ranking.tombstone_header is not None:  # the header mode's
        deletes = np.zeros(chunk.num_rows, bool)
        rows, flags = _last_headers(chunk.column("headers"), ranking.tombstone_header)
        if len(rows):
            true = pc.is_in(flags, value_set=pa.array(TOMBSTONE_TRUE, pa.binary()))
            deletes[rows[pc.fill_null(true, False).to_numpy(zero_copy_only=False)]] = True
        return deletes
    if ranking.tombstone_mode == TombstoneMode.ATTRIBUTE.value:
        attributes = chunk.column("attributes").to_numpy(zero_copy_only=False)
        return np.asarray(attributes & int(RecordAttr.TOMBSTONE) != 0)
    return _flags_of(chunk.column("value").is_null())


def _last_headers(headers: pa.ListArray, name: str) -> tuple[NDArray[np.int64], pa.Array]:
    """The records that have a header ``name`` (in rising order), and the value of its last
    occurrence in each."""
    entries = headers.flatten()
    if not len(entries):
        return np.zeros(0, np.int64), pa.array([], pa.binary())
    keys, values = entries.flatten()
    hits = np.flatnonzero(pc.fill_null(pc.equal(keys, name), False).to_numpy(zero_copy_only=False))
    parents = pc.list_parent_indices(headers).to_numpy()[hits]
    last = np.append(parents[1:] != parents[:-1], True) if len(hits) else np.zeros(0, bool)
    return parents[last].astype(np.int64), values.take(pa.array(hits[last]))


def is_young(timestamp_ms: int, now_ms: int, min_compaction_lag_ms: int) -> bool:
    """Whether a record is too young to be compacted (``min.compaction.lag.ms``).

    Kafka's cleaner stops at the first segment whose largest timestamp is within the lag of
    now (``LogCleanerManager.cleanableOffsets``); a lag of 0 makes nothing young.
    """
    return min_compaction_lag_ms > 0 and timestamp_ms > now_ms - min_compaction_lag_ms


def int64s(column: pa.Array) -> NDArray[np.int64]:
    """An integer or timestamp column's values as int64 (nulls as 0)."""
    values: NDArray[np.int64] = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return values


def bool_column(chunk: pa.RecordBatch, name: str) -> NDArray[np.bool_]:
    """A boolean column of ``chunk`` as numpy."""
    return _flags_of(chunk.column(name))


def _flags_of(column: pa.Array) -> NDArray[np.bool_]:
    flags: NDArray[np.bool_] = column.to_numpy(zero_copy_only=False)
    return flags
