"""A pure reference model of segcompact's state: what the Delta tables must hold.

It applies micro-batches of decoded records exactly as DESIGN.md's compaction semantics say,
record by record in plain Python, so that the Spark job can be checked against it on
generated logs. It favours obviousness over speed.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from segcompact.compaction.rules import Header, header_version, is_tombstone, order_key
from segcompact.config import CompactionStrategy, TopicConfig
from segcompact.format.attributes import ControlType
from segcompact.format.segment import SegmentReader

_CONTROL_KEY = struct.Struct(">hh")


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


def read_log_records(
    path: str | os.PathLike[str], topic: str, partition: int
) -> Iterator[LogRecord]:
    for batch in SegmentReader(path):
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
            if r.is_control and r.key is not None and len(r.key) >= _CONTROL_KEY.size:
                _, kind = _CONTROL_KEY.unpack_from(r.key)
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
        winners: dict[StateKey, tuple[tuple[int, int, int], LogRecord, int | None]] = {}
        for r in candidates:
            tp = (r.topic, r.partition)
            if r.offset < self.log_start.get(tp, 0):
                continue
            if r.key is None:
                self.keyless[tp] += 1
                continue
            rules = self.rules_for(r.topic)
            version = None
            if rules.compaction_strategy is CompactionStrategy.HEADER:
                version = header_version(r.headers, rules.strategy_header)
            if (
                version is None
                and rules.compaction_strategy is CompactionStrategy.HEADER
                and any(k == rules.strategy_header for k, _ in r.headers)
            ):
                self.bad_versions[tp] += 1
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
        return low
