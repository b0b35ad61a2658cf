"""The log both compactions of the interop tests start from: one compacted topic per
:class:`Case`, each produced with a deterministic mix of records by :func:`produce`.

The mix: updates over 30 keys, tombstones, a key that is only ever deleted, an empty key and
value, repeated header keys, null header values. Batches are small and each topic rolls every
couple of KiB, so there are many segments to compact.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from segcompact.format.record import Header
from tests.support.kafka_broker import KafkaBroker
from tests.support.producing import PartitionProducer, producer_settings

PARTITION = 0
KEYS = 30
RECORDS = 300
SEGMENT_BYTES = 2048  # the topics' internal.segment.bytes
BASE_TIMESTAMP_MS = 1_700_000_000_000
MIN_LAG_MS = 3_600_000
YOUNG_RECORDS = 90
TXN_RECORDS = 40  # records per transaction (txns)
ABORTED_TXNS = (1, 4)  # which transactions abort (txns)
OPEN_TXN_RECORDS = 60  # the last transaction of open-*: several segments' worth
BATCH_MESSAGES = 6  # small batches, cut by count (and flush), not by time


@dataclass(frozen=True, slots=True)
class Case:
    topic: str
    codec: str
    producer: dict[str, Any] = field(default_factory=dict)
    # plain: RECORDS non-transactional records. txns: transactions of TXN_RECORDS, some
    # aborted, every marker in a rolled segment. open-commit / open-abort: plain records, then
    # one transaction whose records reach into rolled segments and whose marker is the last
    # thing in the log, so in the active segment.
    # young: plain records, the last YOUNG_RECORDS stamped when produced, min lag MIN_LAG_MS.
    kind: str = "plain"

    @property
    def transactional(self) -> bool:
        return self.kind not in ("plain", "young")

    @property
    def topic_config(self) -> dict[str, Any]:
        """Topic settings of this case beyond the common ones, for Kafka and segcompact alike."""
        return {"min.compaction.lag.ms": MIN_LAG_MS} if self.kind == "young" else {}


CASES = (
    Case("interop-none", "none"),
    Case("interop-gzip", "gzip"),
    Case("interop-snappy", "snappy"),
    Case("interop-lz4", "lz4"),
    Case("interop-zstd", "zstd"),
    # Batches with a producer id: Kafka's cleaner keeps each producer's last batch (empty if
    # need be) for its sequence state. segcompact writes batches without one.
    Case("interop-idempotent", "lz4", {"enable.idempotence": True}),
    Case("interop-txn", "zstd", {"transactional.id": "segcompact-interop-txn"}, kind="txns"),
    Case(
        "interop-open-abort",
        "none",
        {"transactional.id": "segcompact-interop-open-abort"},
        kind="open-abort",
    ),
    Case(
        "interop-open-commit",
        "none",
        {"transactional.id": "segcompact-interop-open-commit"},
        kind="open-commit",
    ),
    Case("interop-young", "lz4", kind="young"),
)


@dataclass(frozen=True, slots=True)
class Message:
    key: bytes
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int  # 0: the time it is produced


def messages(case: Case) -> list[Message]:
    """A deterministic mix per topic: hot and cold keys, tombstones, odd headers."""
    rng = random.Random(f"segcompact-interop-{case.topic}")
    out = []
    for i in range(RECORDS):
        # Skewed keys: low numbers are hot, high ones are written rarely (and may survive
        # from early segments).
        n = min(int(rng.expovariate(1 / 8)), KEYS - 1)
        key = f"key-{n:02d}".encode()
        value: bytes | None = (
            f'{{"i":{i},"key":"{key.decode()}","payload":"lorem ipsum dolor sit amet '
            f'{"x" * rng.randrange(0, 40)}"}}'
        ).encode()
        if rng.random() < 0.12:
            value = None  # tombstone
        headers: list[Header] = [("seq", str(i).encode())]
        if i % 7 == 0:
            headers += [("dup", b"first"), ("dup", b"second")]
        if i % 13 == 0:
            headers.append(("null-value", None))
        if i == 50:
            key, value = b"", b""  # an empty key is a key; an empty value is not a delete
        if i in (60, 200):
            key, value = b"only-ever-deleted", None
        young = case.kind == "young" and i >= RECORDS - YOUNG_RECORDS
        out.append(
            Message(key, value, tuple(headers), 0 if young else BASE_TIMESTAMP_MS + i * 1000)
        )
    return out


def produce(broker: KafkaBroker, case: Case) -> None:
    """The case's messages into its topic, as its ``kind`` says."""
    plain_settings = {**producer_settings(BATCH_MESSAGES), "compression.type": case.codec}
    producer = PartitionProducer(broker, case.topic, {**plain_settings, **case.producer}, PARTITION)

    def send(m: Message, via: PartitionProducer = producer) -> None:
        via.send(m.key, m.value, m.timestamp, m.headers)

    msgs = messages(case)
    if case.kind == "txns":
        for txn, start in enumerate(range(0, len(msgs), TXN_RECORDS)):
            with producer.transaction(commit=txn not in ABORTED_TXNS, name=f"transaction {txn}"):
                for m in msgs[start : start + TXN_RECORDS]:
                    send(m)
        # Plain records after the last marker, more than a segment's worth, so that every
        # marker is in a rolled segment (open-* cover the other case).
        plain = PartitionProducer(broker, case.topic, plain_settings, PARTITION)
        for i in range(3 * SEGMENT_BYTES // 100):
            tail = f"tail-{i % 5}".encode()
            plain.send(tail, b"t" * 100, BASE_TIMESTAMP_MS + (RECORDS + i) * 1000)
        plain.flush("tail records")
    elif case.kind in ("open-commit", "open-abort"):
        # The head comes from a second, non-transactional producer.
        plain = PartitionProducer(broker, case.topic, plain_settings, PARTITION)
        head, last = msgs[: RECORDS - OPEN_TXN_RECORDS], msgs[RECORDS - OPEN_TXN_RECORDS :]
        for m in head:
            send(m, via=plain)
        plain.flush()
        with producer.transaction(commit=case.kind == "open-commit"):
            for m in last:
                send(m)
    else:
        for m in msgs:
            send(m)
        producer.flush()
