"""A segment's decoded records reduced inside the task that decodes them, as Kafka's cleaner
builds its offset map: what leaves the task is what compaction can still use.

- A candidate record (keyed, not transactional, not a control record, of a topic compacted
  straight away, with a readable version header if its topic ranks by one) stays only while it
  is on its key's front (:mod:`segcompact.compaction.front`): exact under any log start and any
  later reduction, so the merge keeps its own reduction and log-start filter unchanged.
- Every other record stays as it is (raw): transactional ones until their marker decides them,
  control records, keyless ones and unreadable versions (which the merge counts), and every
  record of a topic with ``min.compaction.lag.ms`` (the young table keeps them raw).
- The earliest candidate (by timestamp) stays too, so the partition's first dirty timestamp is
  unchanged; :attr:`SegmentReducer.folded` counts the candidates left out, which the summary row
  carries so the partition's record count is unchanged.

Memory is bounded by ``budget_bytes`` (and a chunk): the kept rows are filtered again as later
records supersede them (each time their bytes have doubled, up to the budget), and when the
survivors alone exceed half the budget (a segment of mostly distinct keys) they are emitted and
the front starts afresh; the merge reduces across those emissions as it does across tasks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from segcompact.compaction.front import Front, front
from segcompact.config import CompactionStrategy, CompactorConfig, TopicConfig
from segcompact.format.arrow import binary_buffers


@dataclass(frozen=True, slots=True)
class Ranking:
    """What the reduction needs of a topic's rules (``rules.order_key``)."""

    strategy: str = CompactionStrategy.OFFSET.value
    header: str | None = None  # the version header of the header strategy
    raw: bool = False  # min.compaction.lag.ms > 0: every record goes to the young table

    @classmethod
    def of(cls, topic: TopicConfig) -> Ranking:
        header = topic.compaction_strategy is CompactionStrategy.HEADER
        return cls(
            topic.compaction_strategy.value,
            topic.strategy_header if header else None,
            topic.min_compaction_lag_ms > 0,
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
        for r in (*topics.values(), default):
            CompactionStrategy(r.strategy)  # ValueError names the value
        return cls(topics, default)


class SegmentReducer:
    """One segment's chunks (in log order) in, the rows compaction can use out."""

    def __init__(self, ranking: Ranking, *, budget_bytes: int, pure: bool = False) -> None:
        self.ranking = ranking
        self.budget_bytes = budget_bytes
        self.pure = pure
        self.folded = 0  # candidates left out
        self._as_is = ranking.raw  # every record leaves as it is
        self._last_offset: int | None = None
        # Held rows are filtered again when their bytes pass this, which then doubles: each
        # row is checked a bounded number of times on average.
        self._refilter_at = budget_bytes // 4
        self._start_front()

    def _start_front(self) -> None:
        self._front: Front = front(self.pure)
        self._added = 0  # records given to the front: the next one's id
        self._candidates = 0
        # Candidates that were on a front when held, with their ids.
        self._held: list[tuple[pa.RecordBatch, NDArray[np.int64]]] = []
        self._held_bytes = 0
        self._earliest: tuple[pa.RecordBatch, int] | None = None  # the earliest candidate
        self._earliest_ts = 0

    def add(self, chunk: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Take one decoded chunk; yield the rows that leave now (the raw ones)."""
        offsets = _int64(chunk.column("offset"))
        if not self._as_is and not self._rising(offsets):
            # A damaged log whose offsets do not rise: the front needs log order, so the rest
            # of this segment leaves as it is (the merge still reduces it).
            yield from self._flush()
            self._as_is = True
        if self._as_is:
            yield chunk
            return
        if len(offsets):
            self._last_offset = int(offsets[-1])
        r1, r2, bad = ranks(chunk, self.ranking)
        candidate = (
            ~_flag(chunk, "is_control")
            & ~_flag(chunk, "is_transactional")
            & chunk.column("key").is_valid().to_numpy(zero_copy_only=False)
            & ~bad
        )
        if not candidate.all():
            yield chunk.filter(pa.array(~candidate))
        if not candidate.any():
            return
        key_offsets, key_data, _ = binary_buffers(chunk.column("key"))
        base = self._added
        alive = self._front.add(key_offsets, key_data, r1, r2, offsets, candidate.view(np.uint8))
        self._added += chunk.num_rows
        self._candidates += int(np.count_nonzero(candidate))
        self._track_earliest(chunk, candidate, base)
        keep = np.frombuffer(alive, np.bool_)
        self._hold(chunk.filter(pa.array(keep)), base + np.flatnonzero(keep))
        if self._held_bytes > self._refilter_at:
            self._refilter()
            if self._held_bytes > self.budget_bytes // 2:
                yield from self._flush()
            self._refilter_at = max(
                self.budget_bytes // 4, min(2 * self._held_bytes, self.budget_bytes)
            )

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The rows still on a front, and the earliest candidate."""
        yield from self._flush()

    def _rising(self, offsets: NDArray[np.int64]) -> bool:
        if not len(offsets):
            return True
        after = self._last_offset is None or offsets[0] > self._last_offset
        return bool(after and np.all(offsets[1:] > offsets[:-1]))

    def _hold(self, rows: pa.RecordBatch, ids: NDArray[np.int64]) -> None:
        if rows.num_rows:
            self._held.append((rows, ids))
            self._held_bytes += rows.nbytes

    def _alive(self, ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        return np.frombuffer(self._front.alive(ids.astype(np.int64)), np.bool_)

    def _refilter(self) -> None:
        """Drop the held rows that later records took off their fronts."""
        if not self._held:
            return
        rows = pa.Table.from_batches([r for r, _ in self._held]).combine_chunks()
        ids = np.concatenate([i for _, i in self._held])
        keep = self._alive(ids)
        kept, at = ids[keep], 0
        self._held, self._held_bytes = [], 0
        for batch in rows.filter(pa.array(keep)).to_batches():
            self._hold(batch, kept[at : at + batch.num_rows])
            at += batch.num_rows

    def _flush(self) -> Iterator[pa.RecordBatch]:
        """Emit what is on the fronts (and the earliest candidate); start a new front."""
        self._refilter()
        emitted = 0
        for rows, _ in self._held:
            emitted += rows.num_rows
            yield rows
        if self._earliest is not None:
            row, earliest_id = self._earliest
            if not self._alive(np.array([earliest_id]))[0]:
                emitted += 1
                yield row
        self.folded += self._candidates - emitted
        self._start_front()

    def _track_earliest(
        self, chunk: pa.RecordBatch, candidate: NDArray[np.bool_], base: int
    ) -> None:
        ts = np.where(candidate, _int64(chunk.column("timestamp")), np.iinfo(np.int64).max)
        i = int(np.argmin(ts))
        if self._earliest is None or ts[i] < self._earliest_ts:
            # A copy: a slice would keep the whole chunk's buffers alive.
            self._earliest, self._earliest_ts = (chunk.take(pa.array([i])), base + i), int(ts[i])


def ranks(
    chunk: pa.RecordBatch, ranking: Ranking
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """Per record ``(r1, r2)`` of ``rules.order_key`` (the offset breaks ties), and whether its
    version header is present but unreadable (it then ranks as without one)."""
    n = chunk.num_rows
    zeros = np.zeros(n, np.int64)
    if ranking.strategy == CompactionStrategy.TIMESTAMP.value:
        return zeros, _int64(chunk.column("timestamp")) // 1000, np.zeros(n, bool)
    if ranking.strategy == CompactionStrategy.HEADER.value and ranking.header is not None:
        has, version, bad = header_versions(chunk.column("headers"), ranking.header)
        return has.astype(np.int64), version, bad
    return zeros, zeros.copy(), np.zeros(n, bool)


def header_versions(
    headers: pa.ListArray, name: str
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.bool_]]:
    """Per record: whether its last header ``name`` holds an 8-byte version, that version (a
    big-endian signed long; 0 without one), and whether the header is there but not 8 bytes."""
    n = len(headers)
    has, version, bad = np.zeros(n, bool), np.zeros(n, np.int64), np.zeros(n, bool)
    entries = headers.flatten()
    if not len(entries):
        return has, version, bad
    keys, values = entries.flatten()
    hits = np.flatnonzero(pc.fill_null(pc.equal(keys, name), False).to_numpy(zero_copy_only=False))
    if not len(hits):
        return has, version, bad
    parents = pc.list_parent_indices(headers).to_numpy()[hits]
    last = hits[np.append(parents[1:] != parents[:-1], True)]  # the last match per record
    rows = parents[np.append(parents[1:] != parents[:-1], True)]
    found = values.take(pa.array(last))
    ok = pc.fill_null(pc.binary_length(found), -1).to_numpy(zero_copy_only=False) == 8
    bad[rows[~ok]] = True
    good = found.filter(pa.array(ok))
    if len(good):
        bounds, data, _ = binary_buffers(good)
        index = np.frombuffer(bounds, np.int32)[:-1, None].astype(np.int64) + np.arange(8)
        version[rows[ok]] = np.frombuffer(data, np.uint8)[index].copy().view(">i8").ravel()
        has[rows[ok]] = True
    return has, version, bad


def _int64(column: pa.Array) -> NDArray[np.int64]:
    values: NDArray[np.int64] = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return values


def _flag(chunk: pa.RecordBatch, name: str) -> NDArray[np.bool_]:
    flags: NDArray[np.bool_] = chunk.column(name).to_numpy(zero_copy_only=False)
    return flags
