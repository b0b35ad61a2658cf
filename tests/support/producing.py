"""Producing fixed records to one partition of a test broker with confluent-kafka (librdkafka).

The golden segments and the interop tests both need batch boundaries that come out the same
from run to run, every delivery checked, and transactions that end as the test says: this is
their one producer. ``send`` queues a record; ``flush`` and ``transaction`` raise a
:class:`KafkaError` when a record was not delivered.

    producer = PartitionProducer(broker, "t", producer_settings(batch_messages=64))
    with producer.transaction(commit=False, name="txn 1"):
        producer.send(b"k", b"v", timestamp=1_700_000_000_000)
    # flushed, then aborted: the records are in the log, followed by an ABORT marker
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from segcompact.format.record import Header
from tests.support.jvm import KafkaError
from tests.support.kafka_broker import KafkaBroker

TIMEOUT_S = 60


def producer_settings(batch_messages: int) -> dict[str, Any]:
    """Settings that make batches reproducible: ``linger.ms`` is long, so a batch is cut by
    ``batch.num.messages`` (or by a flush) rather than by timing; one request in flight keeps
    the order without idempotence."""
    return {
        "acks": "all",
        "linger.ms": 1000,
        "batch.num.messages": batch_messages,
        "max.in.flight.requests.per.connection": 1,
        "message.timeout.ms": TIMEOUT_S * 1000,
    }


class PartitionProducer:
    """A confluent-kafka Producer to one topic partition that collects delivery errors.

    ``errors`` is public: a caller's ``on_delivered`` may add its own findings to it.
    """

    def __init__(
        self,
        broker: KafkaBroker,
        topic: str,
        settings: Mapping[str, Any],
        partition: int = 0,
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partition = partition
        self.errors: list[str] = []
        self._producer = Producer(broker.client_config(**settings))
        self._transactional = False

    def send(
        self,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Sequence[Header] = (),
        on_delivered: Callable[[Any], None] | None = None,
    ) -> None:
        """Queue one record; ``timestamp`` 0 lets the producer stamp it when it is produced.
        ``on_delivered`` gets the delivered message (its offset and timestamp)."""

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self.errors.append(str(err))
            elif on_delivered is not None:
                on_delivered(msg)

        self._producer.produce(
            self.topic,
            key=key,
            value=value,
            partition=self.partition,
            timestamp=timestamp,
            headers=list(headers),
            on_delivery=report,
        )

    def flush(self, what: str = "records") -> None:
        """Wait for every queued record; raise if one was not delivered."""
        if self._producer.flush(TIMEOUT_S) != 0:
            raise KafkaError(f"{self.topic}: {what} not delivered within {TIMEOUT_S}s")
        if self.errors:
            raise KafkaError(f"{self.topic}: delivery failed: {self.errors[:5]}")

    @contextmanager
    def transaction(self, *, commit: bool, name: str = "transaction") -> Iterator[None]:
        """Records sent in the block form one transaction, flushed, then committed or aborted.

        ``abort_transaction()`` purges records not yet sent: the flush comes first, so aborted
        records really are in the log, followed by an ABORT marker. Needs ``transactional.id``.
        """
        if not self._transactional:
            self._producer.init_transactions(TIMEOUT_S)
            self._transactional = True
        self._producer.begin_transaction()
        yield
        self.flush(name)
        if commit:
            self._producer.commit_transaction(TIMEOUT_S)
        else:
            self._producer.abort_transaction(TIMEOUT_S)
