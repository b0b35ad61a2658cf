"""A Kafka broker serves segcompact's output to a consumer as if it had written it itself.

The output comes from the session fixture ``compacted`` (conftest.py, built by compacted.py).
For each of its topics a fresh broker creates a one-partition topic and stops; the topic's
partition directory is then emptied except for ``partition.metadata`` and filled with the
published version's real files (``.log``, ``.index``, ``.timeindex``, copied out of
``.versions/…/v<N>``, not the symlink). What Kafka 4.3 needs, found by trying:

- ``partition.metadata`` (the topic id) must stay: without it the broker takes the directory
  for a stray log of a deleted topic, renames it ``*-stray`` and serves an empty partition.
- ``leader-epoch-checkpoint`` may go: the broker writes a new one (segcompact's batches carry
  partition leader epoch -1, so the new leader epoch simply starts at the log end offset).
- The new topic's own empty ``00000000000000000000.log/.index/.timeindex`` must go: left in
  place they would be an empty first segment and the log would start at 0.
- No producer snapshot is needed: the broker rebuilds producer state by reading the segments.
- The log dir keeps ``.kafka_cleanshutdown`` (the broker stopped cleanly), so on restart Kafka
  skips recovery and trusts the files as they are: the log end offset is read from the last
  batch and the indexes are used, not rebuilt. Its checkpoints (recovery point, replication
  offset = high watermark, log start) still say 0 for the new topic, which is harmless: the log
  start offset comes from the first segment and the high watermark of a one-replica partition
  moves to the log end offset once it leads.

The consumer reads from the earliest offset until librdkafka reports the partition's end
(``enable.partition.eof``), after the high watermark has reached segcompact's log end offset.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from segcompact.format.logdir import parse_segment_file
from tests.interop.cases import CASES, PARTITION
from tests.interop.compacted import Compacted, Rec, data_records, segment_logs
from tests.support.kafka_broker import KafkaBroker

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TOPICS = [c.topic for c in CASES]
TIMEOUT_S = 60.0
OUTPUT_SUFFIXES = (".log", ".index", ".timeindex")


def log_end_offset(compacted: Compacted, topic: str) -> int:
    """segcompact's log end offset: one past its last batch (the input's active segment)."""
    return compacted.active_base[topic]


@pytest.fixture(scope="module")
def serving(compacted: Compacted, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A broker whose topics hold segcompact's output and nothing else."""
    broker = KafkaBroker(tmp_path_factory.mktemp("serve") / "broker")
    with broker:
        for topic in TOPICS:
            broker.create_topic(topic, config={"cleanup.policy": "compact"})
    for topic in TOPICS:
        target = broker.partition_dir(topic, PARTITION)
        for f in target.iterdir():
            if f.name != "partition.metadata":
                f.unlink()
        source = compacted.output_dir(topic)
        assert not source.is_symlink() and source.name.startswith("v")
        for f in source.iterdir():
            assert f.suffix in OUTPUT_SUFFIXES, f
            shutil.copyfile(f, target / f.name)
    with broker:
        yield broker


def consume_all(broker: KafkaBroker, topic: str, high_watermark: int) -> tuple[list[Rec], int]:
    """Every record from the earliest offset to the end; and the offset librdkafka's
    end-of-partition event reported."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        broker.client_config(
            **{
                "group.id": f"interop-{topic}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
    )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        tp = TopicPartition(topic, PARTITION)
        # The high watermark starts at the (new topic's) checkpoint and moves to the log end
        # offset once the broker leads the partition again.
        while consumer.get_watermark_offsets(tp, timeout=10)[1] < high_watermark:
            assert time.monotonic() < deadline, f"{topic}: high watermark stays below the end"
            time.sleep(0.1)
        consumer.assign([TopicPartition(topic, PARTITION, OFFSET_BEGINNING)])
        records: list[Rec] = []
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    return records, msg.offset()
                raise AssertionError(f"{topic}: consumer error {err}")
            _, ts = msg.timestamp()
            headers = tuple(msg.headers() or ())
            records.append((msg.offset(), ts, msg.key(), msg.value(), headers))
        raise AssertionError(f"{topic}: no end of partition within {TIMEOUT_S}s: {records[-3:]}")
    finally:
        consumer.close()


@pytest.mark.parametrize("topic", TOPICS)
def test_consumer_reads_the_compacted_records(
    serving: KafkaBroker, compacted: Compacted, topic: str
) -> None:
    want = data_records(segment_logs(compacted.output_dir(topic)))
    end = log_end_offset(compacted, topic)
    got, eof = consume_all(serving, topic, end)
    assert got == want
    assert eof == end  # the high watermark: segcompact's log end offset


def test_broker_loaded_the_files_as_they_are(serving: KafkaBroker, compacted: Compacted) -> None:
    """No recovery, no index rebuilt, no stray log: Kafka took segcompact's files as written."""
    text = serving.log_file.read_text(encoding="utf-8", errors="replace")
    last_start = text.rindex("=== starting:")
    text = text[last_start:]
    assert "Skipping recovery" in text
    for topic in TOPICS:
        end = log_end_offset(compacted, topic)
        pattern = rf"Completed load of Log\(dir=\S*/{re.escape(topic)}-0,.*logEndOffset={end}\)"
        assert re.search(pattern, text), f"{topic}: not loaded with log end offset {end}"
    for complaint in ("corrupt", "Rebuilding", "stray", "Truncating", "Recovering segment"):
        mentions = [line for line in text.splitlines() if complaint.lower() in line.lower()]
        ours = [line for line in mentions if any(f"{t}-0" in line for t in TOPICS)]
        assert not ours, ours[:3]


def test_log_start_offset_is_kept(serving: KafkaBroker, compacted: Compacted) -> None:
    from confluent_kafka import Consumer, TopicPartition

    kafka_start = {
        t: parse_segment_file(str(segment_logs(compacted.kafka_dir(t))[0]))[0] for t in TOPICS
    }
    assert set(kafka_start.values()) == {0}
    consumer = Consumer(serving.client_config(**{"group.id": "interop-lso"}))
    try:
        low = {
            t: consumer.get_watermark_offsets(TopicPartition(t, PARTITION), timeout=10)[0]
            for t in TOPICS
        }
    finally:
        consumer.close()
    assert low == kafka_start
