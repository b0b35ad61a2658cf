"""A pure reference model of segcompact's state: what the Delta tables must hold. The tests'
oracle: no code of segcompact's uses it.

It applies micro-batches of decoded records exactly as DESIGN.md's compaction semantics say,
record by record in plain Python, so that the Spark job can be checked against it on
generated logs. It favours obviousness over speed.
"""

from __future__ import annotations

import bisect
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from segcompact.config import CompactionStrategy, TombstoneMode, TopicConfig
from segcompact.format.attributes import RecordAttr
from segcompact.format.control import ControlType, control_type
from segcompact.format.io import InputFile
from segcompact.format.logdir import parse_segment_file
from segcompact.format.record import Header
from segcompact.format.segment import SegmentReader

# The per-record rules, one record at a time: the oracle that ``compaction/rules.py``'s
# vectorized rules (the job's only ones) are held to. Written apart from them on purpose.

_LONG = struct.Struct(">q")
TOMBSTONE_TRUE = (b"true", b"1", b"\x01")


def first_uncleanable_offset(
    records: Iterable[tuple[int, int, int]], now_ms: int, min_compaction_lag_ms: int
) -> int | None:
    """The offset from which a partition's log stays raw, or None when all of it may be cleaned.

    ``records`` are ``(offset, timestamp, segment base offset)``: as in Kafka, a young record
    keeps its whole segment, and every later one, out of the cleaning.
    """
    if min_compaction_lag_ms <= 0:
        return None  # a lag of 0 makes nothing young
    bases = [base for _, ts, base in records if ts > now_ms - min_compaction_lag_ms]
    return min(bases) if bases else None


def last_header(headers: Sequence[Header], name: str) -> tuple[bool, bytes | None]:
    """``(present, value)`` of the last occurrence of header ``name``."""
    for key, value in reversed(headers):
        if key == name:
            return True, value
    return False, None


def header_version(headers: Sequence[Header], name: str | None) -> int | None:
    """The version under the header strategy: an 8-byte big-endian signed long, else None.

    A present header whose value is not 8 bytes counts as absent (the caller counts it).
    """
    if name is None:
        return None
    present, value = last_header(headers, name)
    if not present or value is None or len(value) != _LONG.size:
        return None
    return int(_LONG.unpack(value)[0])


def order_key(
    strategy: CompactionStrategy, offset: int, timestamp_ms: int, version: int | None
) -> tuple[int, int, int]:
    """A key whose maximum is the record that wins under ``strategy``.

    offset: the highest offset. timestamp: the highest timestamp, then offset. header: a record
    with a version beats one without; two with: the higher version, then offset; neither: offset.
    """
    if strategy is CompactionStrategy.TIMESTAMP:
        return (0, timestamp_ms, offset)
    if strategy is CompactionStrategy.HEADER:
        return (0, 0, offset) if version is None else (1, version, offset)
    return (0, 0, offset)


def is_tombstone(
    rules: TopicConfig, value: bytes | None, headers: Sequence[Header], attributes: int
) -> bool:
    """Whether a record deletes its key under the topic's tombstone mode."""
    if rules.tombstone_mode is TombstoneMode.HEADER:
        present, flag = last_header(headers, rules.tombstone_header)
        return present and flag in TOMBSTONE_TRUE
    if rules.tombstone_mode is TombstoneMode.ATTRIBUTE:
        return bool(attributes & RecordAttr.TOMBSTONE)
    return value is None


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record as read from a segment, with the batch fields compaction needs."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    attributes: int
    producer_id: int
    is_transactional: bool
    is_control: bool
    delete_horizon: int | None
    batch_last_offset: int
    segment_base: int  # base offset of the segment the record was read from


def read_log_records(file: InputFile, topic: str, partition: int) -> Iterator[LogRecord]:
    """Every record of one segment file, markers included, as the model reads them."""
    named = parse_segment_file(file.location)
    if named is None:
        raise ValueError(f"{file.location}: not a segment file name (<20-digit base offset>.log)")
    segment_base = named[0]
    for batch in SegmentReader(file):
        for r in batch.records():
            yield LogRecord(
                topic,
                partition,
                r.offset,
                r.timestamp,
                int(batch.timestamp_type),
                r.key,
                r.value,
                r.headers,
                r.attributes,
                batch.producer_id,
                batch.is_transactional,
                batch.is_control,
                batch.delete_horizon_ms,
                batch.last_offset,
                segment_base,
            )


@dataclass(frozen=True, slots=True)
class StateRow:
    """One row of the state table (times in epoch milliseconds)."""

    topic: str
    partition: int
    key: bytes
    offset: int
    timestamp: int
    timestamp_type: int
    value: bytes | None
    headers: tuple[Header, ...]
    order_value: int | None
    tombstone: bool
    delete_horizon: int | None
    cleaned_at: int


StateKey = tuple[str, int, bytes]
ProducerKey = tuple[str, int, int]


@dataclass
class ReferenceModel:
    rules_for: Callable[[str], TopicConfig]
    state: dict[StateKey, StateRow] = field(default_factory=dict)
    # Undecided transactional records, and every marker seen, per producer.
    pending: dict[ProducerKey, list[LogRecord]] = field(default_factory=dict)
    markers: dict[ProducerKey, list[tuple[int, bool]]] = field(default_factory=dict)
    # Records younger than min.compaction.lag.ms (and all after them), raw, by offset.
    young: dict[tuple[str, int], dict[int, LogRecord]] = field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    log_end: dict[tuple[str, int], int] = field(default_factory=dict)
    keyless: Counter[tuple[str, int]] = field(default_factory=Counter)
    bad_versions: Counter[tuple[str, int]] = field(default_factory=Counter)

    def apply(self, records: Iterable[LogRecord], now_ms: int) -> None:
        """Merge one micro-batch; records may come in any order."""
        batch = list(records)
        for r in batch:
            tp = (r.topic, r.partition)
            self.log_end[tp] = max(self.log_end.get(tp, 0), r.batch_last_offset + 1)
        for r in batch:
            kind = control_type(r.key) if r.is_control else None
            if kind is not None:
                marks = self.markers.setdefault((r.topic, r.partition, r.producer_id), [])
                bisect.insort(marks, (r.offset, kind == ControlType.COMMIT))
        candidates = [r for r in batch if not r.is_control and not r.is_transactional]
        waiting = [r for r in batch if r.is_transactional and not r.is_control]
        for rs in self.pending.values():
            waiting.extend(rs)
        self.pending = {}
        for r in waiting:
            pk = (r.topic, r.partition, r.producer_id)
            marks = self.markers.get(pk, [])
            i = bisect.bisect_right(marks, (r.offset, True))
            if i == len(marks):
                self.pending.setdefault(pk, []).append(r)
            elif marks[i][1]:
                candidates.append(r)
        ripe = []
        for r in candidates:
            tp = (r.topic, r.partition)
            if r.offset < self.log_start.get(tp, 0):
                continue
            if r.key is None:
                self.keyless[tp] += 1
                continue
            rules = self.rules_for(r.topic)
            if (
                rules.compaction_strategy is CompactionStrategy.HEADER
                and header_version(r.headers, rules.strategy_header) is None
                and any(k == rules.strategy_header for k, _ in r.headers)
            ):
                self.bad_versions[tp] += 1
            if rules.min_compaction_lag_ms > 0:
                self.young.setdefault(tp, {})[r.offset] = r
            else:
                ripe.append(r)
        self._compact(ripe, now_ms)
        self.graduate(now_ms)

    def graduate(self, now_ms: int) -> None:
        """Compact the young records that may be compacted now: those below the first segment
        holding a record younger than ``min.compaction.lag.ms``."""
        for tp, young in list(self.young.items()):
            lag = self.rules_for(tp[0]).min_compaction_lag_ms
            boundary = first_uncleanable_offset(
                ((r.offset, r.timestamp, r.segment_base) for r in young.values()), now_ms, lag
            )
            ripe = [r for o, r in young.items() if boundary is None or o < boundary]
            self._compact(ripe, now_ms)
            rest = {o: r for o, r in young.items() if boundary is not None and o >= boundary}
            if rest:
                self.young[tp] = rest
            else:
                del self.young[tp]

    def output(self, topic: str, partition: int) -> list[tuple[int, bytes, bytes | None]]:
        """``(offset, key, value)`` of what a materialisation writes: state and young records."""
        rows = [
            (v.offset, v.key, v.value) for k, v in self.state.items() if k[:2] == (topic, partition)
        ]
        young = self.young.get((topic, partition), {}).values()
        rows += [(r.offset, r.key, r.value) for r in young if r.key is not None]
        return sorted(rows)

    def _compact(self, records: Iterable[LogRecord], now_ms: int) -> None:
        """Merge keyed records into state: per key the winner under the topic's strategy."""
        winners: dict[StateKey, tuple[tuple[int, int, int], LogRecord, int | None]] = {}
        for r in records:
            assert r.key is not None
            rules = self.rules_for(r.topic)
            version = None
            if rules.compaction_strategy is CompactionStrategy.HEADER:
                version = header_version(r.headers, rules.strategy_header)
            rank = order_key(rules.compaction_strategy, r.offset, r.timestamp, version)
            sk = (r.topic, r.partition, r.key)
            if sk not in winners or rank > winners[sk][0]:
                winners[sk] = (rank, r, version)
        for sk, (rank, r, version) in winners.items():
            rules = self.rules_for(r.topic)
            old = self.state.get(sk)
            if (
                old is not None
                and order_key(rules.compaction_strategy, old.offset, old.timestamp, old.order_value)
                >= rank
            ):
                continue
            tombstone = is_tombstone(rules, r.value, r.headers, r.attributes)
            horizon = None
            if tombstone:
                horizon = (
                    r.delete_horizon
                    if r.delete_horizon is not None
                    else now_ms + rules.delete_retention_ms
                )
            self.state[sk] = StateRow(
                r.topic,
                r.partition,
                sk[2],
                r.offset,
                r.timestamp,
                r.timestamp_type,
                r.value,
                r.headers,
                version,
                tombstone,
                horizon,
                now_ms,
            )

    def expire(self, now_ms: int) -> None:
        """Drop tombstones whose delete horizon has passed."""
        self.state = {
            k: v
            for k, v in self.state.items()
            if not (v.tombstone and v.delete_horizon is not None and v.delete_horizon <= now_ms)
        }

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """KIP-107: move the log start offset forward (never back); return the new one."""
        tp = (topic, partition)
        low = max(self.log_start.get(tp, 0), offset)
        self.log_start[tp] = low
        self.state = {
            k: v
            for k, v in self.state.items()
            if not (k[0] == topic and k[1] == partition and v.offset < low)
        }
        if tp in self.young:
            self.young[tp] = {o: r for o, r in self.young[tp].items() if o >= low}
        return low
