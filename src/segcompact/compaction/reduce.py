"""A log's decoded records (a segment, or a partition's consecutive segments) reduced inside the
task that decodes them, as Kafka's cleaner builds its offset map: what leaves the task is what
compaction can still use, each record classified under its topic's rules
(:func:`segcompact.compaction.rules.classify`: its version, tombstone flag, and whether its
version header was unreadable), so that nothing after the task parses a header.

- A candidate record (keyed, not transactional, not a control record, of a topic compacted
  straight away, with a readable version header if its topic ranks by one) stays only while it
  is on its key's front (:mod:`segcompact.compaction.front`): exact under any log start and any
  later reduction, so the merge keeps its own reduction and log-start filter unchanged.
- Every other record stays as it is (raw): transactional ones until their marker decides them,
  control records, keyless ones and unreadable versions (which the merge counts), and every
  record of a topic with ``min.compaction.lag.ms`` (the young table keeps them raw).
- :attr:`SegmentReducer.earliest` is the earliest candidate's timestamp and
  :attr:`SegmentReducer.folded` counts the candidates left out; the summary row carries both, so
  the partition's first dirty timestamp and record count are unchanged.
- :attr:`SegmentReducer.one_per_key` says whether at most one candidate per key left (the offset
  strategy in one round, and a second pass that saw the records of the first): the merge then
  needs no reduction across the rows of a partition whose batch holds these segments only.

Memory is bounded by about one and a half ``budget_bytes`` and a chunk (the fronts up to the
budget, the rows held up to three eighths of it), as Kafka's cleaner bounds its offset map
and reads a segment twice. While the rows on the fronts fit a quarter of the budget, they are
held (and filtered again as later records supersede them, when their bytes have doubled or
grown by an eighth of the budget: up to three eighths of it then) and leave when the log ends:
one pass. When they do not (a log of many distinct keys), they are dropped and the fronts
alone go on, holding keys and ranks but no values; the log is then decoded a second time
(:attr:`SegmentReducer.rescan`) and the records that leave are built as they come, the others
checked but not stored (:meth:`SegmentReducer.select`). When a chunk could take the fronts past
the budget, a round ends before it (what it kept leaves, or is marked for the second pass) and
new fronts start; the merge reduces across rounds as it does across tasks.

Decoding keys first (``keys_first``: the source's choice for a log past a chunk's bytes) is that
second pass from the start: the first pass's chunks hold keys, offsets, timestamps, attributes,
batch fields and each value's validity, and headers only where the topic's rules read one, no
values; nothing is held; the second pass builds the records that leave only, and skips the
batches that hold none (their CRC checked, not decompressed). Most records of a compacted log
lose: their values are never copied, at the cost of reading the files twice, as Kafka's
cleaner does. Its memory is the fronts (up to the budget) and a chunk of those columns.

Memory is bounded by records too, for logs of millions of tiny records: a round also ends before
a chunk that would take it past ``budget_records`` records (a front keeps a flag per record of
its round, and the round two bits per record: which are candidates, which others wait for the
second pass), and what the second pass needs of each round is one bit per record.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from segcompact.compaction.front import Front, front
from segcompact.compaction.rules import Ranking, bool_column, classify, int64s, ranks
from segcompact.config import CompactionStrategy
from segcompact.format.arrow import Selection, binary_buffers

_IDS_AT_ONCE = 1 << 20  # records whose flags are asked of a front at once
_FLAGS_AT_ONCE = 1 << 16  # records whose second-pass flags are unpacked at once
DEFAULT_BUDGET_RECORDS = 1 << 24


class SegmentReducer:
    """A log's chunks (in log order) in, the rows compaction can use out.

    :meth:`add` each decoded chunk, then :meth:`finish`; when :attr:`rescan` is then true, decode
    the log again: each segment with the :meth:`select` of its records, giving what it builds
    to :meth:`leave` and the selection to :meth:`done` at its end, until :attr:`rescanned`.
    Records are numbered in log order (their id); the second pass stops at the records the
    first one saw, should the file have grown since.

    ``keys_first`` decodes keys first: the first pass's chunks need no values (decode them with
    ``values=False``, and ``headers=`` :attr:`headers`); nothing leaves before the second
    pass, which builds the records that leave only. A lagged topic's records all leave as they
    are, in one pass: it cannot."""

    def __init__(
        self,
        ranking: Ranking,
        *,
        budget_bytes: int,
        budget_records: int = DEFAULT_BUDGET_RECORDS,
        pure: bool = False,
        keys_first: bool = False,
    ) -> None:
        """Raises ValueError for a lagged topic read ``keys_first``."""
        if keys_first and ranking.lagged:
            raise ValueError("a lagged topic's records leave as they are: not keys first")
        self.ranking = ranking
        self.budget_bytes = budget_bytes
        self.budget_records = budget_records
        self.pure = pure
        self.folded = 0  # candidates left out
        self.earliest: int | None = None  # the earliest candidate's timestamp (the column's unit)
        self._rounds = 0  # rounds that had candidates
        self._seen = 0  # records added: the next one's id
        self._last_offset: int | None = None
        # From this id on every record leaves as it is (a lagged topic: all of them).
        self._as_is_from: int | None = 0 if ranking.lagged else None
        # The second pass: records leave where ``_decided`` (per round: its first id and one bit
        # per record) says; the rounds that ended before it was needed are not there.
        self._rescan = keys_first
        self._decided: list[tuple[int, int, NDArray[np.uint8]]] = []
        self._again = 0  # records of the second pass so far
        # The sums over each pass's records of their batch's base offset plus one (mod 2^64; a
        # batch at offset 0 counts too): the second pass saw the first's records only if they
        # match.
        self._sums = [0, 0]
        self._start_round()

    @property
    def rescan(self) -> bool:
        """Whether the log must be decoded again (after :meth:`finish`)."""
        return self._rescan

    @property
    def headers(self) -> bool:
        """Whether the first pass reads headers (the topic's version or tombstone header)."""
        return self.ranking.header is not None or self.ranking.tombstone_header is not None

    @property
    def one_per_key(self) -> bool:
        """Whether at most one candidate per key left the log (after :meth:`finish`, and
        :meth:`done` for every segment if :attr:`rescan`): the offset strategy keeps one per
        key in a round; any other, a second round, offsets that do not rise, or a second pass
        that did not see the records of the first (a file gone or rewritten in between) may
        leave several."""
        # A lagged topic's records all leave as they are: none is a candidate of the merge.
        as_is = self._as_is_from is not None and not self.ranking.lagged
        same = not self.rescan or (self.rescanned and self._sums[0] == self._sums[1])
        return (
            self._rounds <= 1
            and not as_is
            and same
            and self.ranking.strategy == CompactionStrategy.OFFSET.value
        )

    @property
    def rescanned(self) -> bool:
        """Whether the second pass has had every record the first pass saw."""
        return self._again >= self._seen

    def _start_round(self) -> None:
        self._front: Front = front(self.pure)
        self._round_start = self._seen  # the front's ids count from here
        self._front_ids = 0  # records given to the front
        self._candidates = 0
        # Per chunk of the round: its first id, its records, which are candidates and which
        # others leave in the second pass (``np.packbits``): the round's bits once it ends.
        self._pending: list[tuple[int, int, NDArray[np.uint8], NDArray[np.uint8]]] = []
        # Candidates that were on a front when held, with their ids (first pass, holding).
        self._held: list[tuple[pa.RecordBatch, NDArray[np.int64]]] = []
        self._held_bytes = 0
        # At least what the held rows still on a front take: rows only ever leave fronts.
        self._live_bound = 0
        # Held rows are filtered again when their bytes pass this (``_bound_held``).
        self._refilter_at = self.budget_bytes // 8

    def add(self, chunk: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Take one decoded chunk; yield the rows that leave now, classified."""
        chunk = classify(chunk, self.ranking)
        first = self._seen
        offsets = int64s(chunk.column("offset"))
        self._add_sum(chunk)
        if self._as_is_from is None and not self._rising(offsets):
            # A damaged log whose offsets do not rise: the front needs log order, so the rest
            # of the log leaves as it is (the merge still reduces it).
            yield from self._end_round()
            self._as_is_from = first
        elif self._front.peak_bytes(chunk.num_rows) > self.budget_bytes or (
            self._front_ids and self._front_ids + chunk.num_rows > self.budget_records
        ):
            yield from self._end_round()  # this chunk could take the fronts past a budget
        self._seen += chunk.num_rows
        if self._as_is_from is not None:
            if self.rescan:
                self._note(first, np.zeros(chunk.num_rows, bool), np.ones(chunk.num_rows, bool))
            else:
                yield chunk
            return
        if len(offsets):
            self._last_offset = int(offsets[-1])
        candidate = self._candidates_of(chunk)
        self._note(first, candidate, ~candidate & self.rescan)
        if not self.rescan and not candidate.all():
            yield chunk.filter(pa.array(~candidate))
        # Every record gets its id on the front, candidate or not.
        key_offsets, key_data, _ = binary_buffers(chunk.column("key"))
        r1, r2 = self._ranks
        alive = self._front.add(key_offsets, key_data, r1, r2, offsets, candidate.view(np.uint8))
        self._front_ids += chunk.num_rows
        if not candidate.any():
            return
        self._candidates += int(np.count_nonzero(candidate))
        self._track_earliest(chunk, candidate)
        if not self.rescan:
            keep = np.frombuffer(alive, np.bool_)
            self._hold(chunk.filter(pa.array(keep)), first + np.flatnonzero(keep))
            self._bound_held()

    def _bound_held(self) -> None:
        """Drop every held row for a second pass once those still on a front take more than a
        quarter of the budget; else filter them again when their bytes have doubled, or grown
        by an eighth of the budget (each refilter copies every row held: near the quarter,
        it waits for that many new ones)."""
        cap = self.budget_bytes // 4
        if self._held_bytes > cap and self._live_bound > cap and self._live_bytes() > cap:
            self._rescan = True
            self._held, self._held_bytes, self._live_bound = [], 0, 0
            pa.default_memory_pool().release_unused()
        elif self._held_bytes > self._refilter_at:
            self._refilter()
            self._refilter_at = max(
                self.budget_bytes // 8,
                min(2 * self._held_bytes, self._held_bytes + self.budget_bytes // 8),
            )

    def finish(self) -> Iterator[pa.RecordBatch]:
        """The rows still on a front (or, with :attr:`rescan`, what the second pass needs to
        know of them)."""
        yield from self._end_round()

    def select(self, first: int, records: int) -> Selection:
        """The second pass: which of the ``records`` records from id ``first`` (a segment's, as
        the first pass read them) leave; decode the segment with it (``decode_segment``'s
        ``select``), give each chunk to :meth:`leave` and, at its end, the selection to
        :meth:`done`."""
        assert self.rescan, "no second pass was needed"
        start, unpacked = 0, b""  # the flags of records from ``start``, a window at once

        def flags(at: int, count: int) -> bytes:
            nonlocal start, unpacked
            if not start <= at <= at + count <= start + len(unpacked):
                known = max(0, min(max(count, _FLAGS_AT_ONCE), records - at))
                start, unpacked = at, self._leaving(first + at, known).tobytes()
            # The file may have grown: nothing past ``records`` leaves.
            return unpacked[at - start : at - start + count].ljust(count, b"\0")

        return Selection(flags, records)

    def leave(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """The second pass: the rows a :meth:`select` built, classified."""
        return classify(rows, self.ranking)

    def done(self, selection: Selection) -> None:
        """The second pass: a segment's :meth:`select` has been decoded (or as far as it
        could: the rest of its records leave nothing)."""
        self._again += min(selection.decoded, selection.records)
        self._sums[1] = (self._sums[1] + selection.batches) % (1 << 64)
        self.skip(max(0, selection.records - selection.decoded))

    def skip(self, records: int) -> None:
        """The second pass: the next ``records`` records cannot be read again (their file is
        gone or shorter); none of them leaves."""
        self._again += records

    def _leaving(self, first: int, count: int) -> NDArray[np.bool_]:
        """Whether records ``first..first + count`` leave in the second pass."""
        keep = np.zeros(count, bool)
        for start, length, bits in self._decided:
            lo, hi = max(first, start), min(first + count, start + length)
            if lo < hi:
                keep[lo - first : hi - first] = _bits(bits, lo - start, hi - start)
        return keep

    def _add_sum(self, chunk: pa.RecordBatch) -> None:
        bases = int64s(chunk.column("batch_base_offset"))
        total = int(np.add.reduce(bases.view(np.uint64), dtype=np.uint64)) + len(bases)
        self._sums[0] = (self._sums[0] + total) % (1 << 64)

    def _note(self, first: int, candidate: NDArray[np.bool_], leaves: NDArray[np.bool_]) -> None:
        """Keep, for the round's end, which of a chunk's records are candidates and which
        others leave in the second pass."""
        self._pending.append((first, len(candidate), np.packbits(candidate), np.packbits(leaves)))

    def _candidates_of(self, chunk: pa.RecordBatch) -> NDArray[np.bool_]:
        """Which records of a classified chunk are candidates; their ranks are left in
        ``_ranks``."""
        self._ranks = ranks(chunk, self.ranking)
        candidate: NDArray[np.bool_] = (
            ~bool_column(chunk, "is_control")
            & ~bool_column(chunk, "is_transactional")
            & chunk.column("key").is_valid().to_numpy(zero_copy_only=False)
            & ~bool_column(chunk, "bad_version")
        )
        return candidate

    def _rising(self, offsets: NDArray[np.int64]) -> bool:
        if not len(offsets):
            return True
        after = self._last_offset is None or offsets[0] > self._last_offset
        return bool(after and np.all(offsets[1:] > offsets[:-1]))

    def _hold(self, rows: pa.RecordBatch, ids: NDArray[np.int64]) -> None:
        if rows.num_rows:
            self._held.append((rows, ids))
            self._held_bytes += rows.nbytes
            self._live_bound += rows.nbytes

    def _alive(self, ids: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether these records (by id) are on their fronts now."""
        relative = (ids - self._round_start).astype(np.int64)
        return np.frombuffer(self._front.alive(relative), np.bool_)

    def _live_bytes(self) -> int:
        """About what the held rows still on a front take (no copy); also the new bound."""
        live = 0
        for rows, ids in self._held:
            live += rows.nbytes * int(np.count_nonzero(self._alive(ids))) // rows.num_rows
        self._live_bound = live
        return live

    def _refilter(self) -> None:
        """Drop the held rows that later records took off their fronts."""
        if not self._held:
            return
        held, self._held, self._held_bytes, self._live_bound = self._held[::-1], [], 0, 0
        while held:  # one batch at a time, each let go once filtered: no copy of them all
            rows, ids = held.pop()
            keep = self._alive(ids)
            self._hold(rows.filter(pa.array(keep)), ids[keep])

    def _end_round(self) -> Iterator[pa.RecordBatch]:
        """Emit what is on the fronts, or mark it for the second pass; start a new round."""
        if self._candidates:
            self._rounds += 1
        if self.rescan:
            # One flag per record of the round: a candidate's, whether it is on its front; any
            # other's, whether it waited for the second pass (it did not leave as it came).
            decided = np.zeros(self._seen - self._round_start, bool)
            for first, n, candidate, leaves in self._pending:
                at = first - self._round_start
                on = _bits(candidate, 0, n)
                for start in range(0, n, _IDS_AT_ONCE) if on.any() else ():
                    stop = min(n, start + _IDS_AT_ONCE)
                    alive = self._alive(first + np.arange(start, stop))
                    decided[at + start : at + stop] = alive & on[start:stop]
                decided[at : at + n] |= _bits(leaves, 0, n)
            if len(decided):
                self._decided.append((self._round_start, len(decided), np.packbits(decided)))
            emitted = len(self._front)  # the candidates on it
        else:
            self._refilter()
            emitted = 0
            for rows, _ in self._held:
                emitted += rows.num_rows
                yield rows
        self.folded += self._candidates - emitted
        self._start_round()

    def _track_earliest(self, chunk: pa.RecordBatch, candidate: NDArray[np.bool_]) -> None:
        first = int(int64s(chunk.column("timestamp"))[candidate].min())
        self.earliest = first if self.earliest is None else min(self.earliest, first)


def _bits(packed: NDArray[np.uint8], start: int, stop: int) -> NDArray[np.bool_]:
    """Flags ``start..stop`` of those ``np.packbits`` packed."""
    first = start // 8
    flags = np.unpackbits(packed[first : (stop + 7) // 8])
    return flags[start - 8 * first : stop - 8 * first].astype(bool)
