"""The Kafka broker helper works end to end: a real broker writes a segment we can read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.jvm import kafka_jars_available, missing_kafka_message
from tests.support.kafka_broker import KafkaBroker

pytestmark = pytest.mark.kafka


def test_broker_writes_segment_with_produced_records(tmp_path: Path) -> None:
    if not kafka_jars_available():
        # Not a skip: CI must have Kafka (make test fetches it), so its absence is a failure.
        pytest.fail(missing_kafka_message())
    from confluent_kafka import Producer
    from kafka.record import MemoryRecords

    sent = [(b"k1", b"v1"), (b"k2", None), (None, b"v3")]
    errors: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    with KafkaBroker(tmp_path / "broker") as broker:
        broker.create_topic("smoke")
        producer = Producer(broker.client_config(acks="all"))
        for key, value in sent:
            producer.produce("smoke", key=key, value=value, partition=0, on_delivery=on_delivery)
        assert producer.flush(30) == 0
        assert errors == []

    logs = sorted(broker.partition_dir("smoke").glob("*.log"))
    assert [p.name for p in logs] == ["00000000000000000000.log"]
    got = [
        (r.offset, r.key, r.value) for batch in MemoryRecords(logs[0].read_bytes()) for r in batch
    ]
    assert got == [(offset, key, value) for offset, (key, value) in enumerate(sent)]
