"""From broker to lake: a real Kafka 4.3.1 broker rolling segments every second under a
producer, its own log cleaner on; ``segcompact ship`` to MinIO between rolls; ``segcompact run
--once`` on the shipped copy (``rolled_only = false``). The state is every key's last record
of everything produced before the active segment: the records appended to a segment after the
shipper had looked at it while it was active are there, and so is the last shipped segment.

The broker's wall clock rolls its segments (``segment.ms``): the loops below wait for a roll,
bounded, and no result depends on how long one takes. ``min.compaction.lag.ms`` keeps the
cleaner off segments younger than 3 s, so each is shipped before the cleaner rewrites it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from segcompact.config import load_config
from segcompact.config.ship import parse_ship_config
from segcompact.ship.manifest import PartitionManifest
from segcompact.ship.shipper import Shipper
from tests.e2e.harness import delta_rows, run_cli
from tests.support.jvm import kafka_jars_available, missing_kafka_message
from tests.support.kafka_broker import KafkaBroker
from tests.support.minio import MinioServer
from tests.support.ship import manifest_entries

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TOPIC = "shipped"
ROUNDS = 4
_WAIT_S = 60  # a bound on a broker that never rolls, not a pass condition


def _logs(directory: Path) -> dict[int, int]:
    """The partition's segments: base offset → size."""
    return {int(p.name[:20]): p.stat().st_size for p in directory.glob("*.log")}


def test_broker_to_shipper_to_object_store_to_job(
    minio: MinioServer, tmp_path: Path, spark_conf_dir: Path
) -> None:
    if not kafka_jars_available():
        pytest.fail(missing_kafka_message())
    from confluent_kafka import Producer

    bucket = minio.make_bucket(f"ship-{uuid.uuid4().hex[:8]}")
    target = f"s3a://{bucket}/segments"
    produced: dict[int, tuple[bytes, bytes]] = {}  # offset → key, value

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        produced[msg.offset()] = (msg.key(), msg.value())

    # The shipper waits for the high watermark the broker checkpoints: every 200 ms here.
    properties = {
        "log.cleaner.backoff.ms": 100,
        "replica.high.watermark.checkpoint.interval.ms": 200,
    }
    with KafkaBroker(tmp_path / "broker", properties=properties) as broker:
        broker.create_topic(
            TOPIC,
            config={
                "cleanup.policy": "compact",
                "segment.ms": 1000,
                "min.cleanable.dirty.ratio": 0.01,
                "min.compaction.lag.ms": 3000,
                "delete.retention.ms": 86_400_000,
            },
        )
        partition = broker.partition_dir(TOPIC)
        config = parse_ship_config(
            {
                "ship": {"log_dirs": [str(broker.log_dir)], "to": target, "topics": [TOPIC]},
                "spark": minio.spark_settings(),
            },
            "ship.toml",
        )
        shipper = Shipper(config)
        producer = Producer(broker.client_config(**{"linger.ms": 0}))

        def send(key: str, count: int = 1) -> None:
            for i in range(count):
                producer.produce(
                    TOPIC,
                    key=key.encode(),
                    value=b"%s-%d" % (key.encode(), i),
                    on_delivery=delivered,
                )
            producer.flush(30)

        def roll() -> int:
            """Send until the broker rolls; the new active segment's base offset."""
            active = max(_logs(partition))
            deadline = time.monotonic() + _WAIT_S
            while max(_logs(partition)) == active:
                assert time.monotonic() < deadline, f"no roll of {active}"
                time.sleep(0.05)  # waiting for segment.ms to pass on the broker's clock
                send(f"filler-{len(produced) % 5}")
            return max(_logs(partition))

        seen_active: dict[int, int] = {}  # base → size when the shipper looked at it active
        for r in range(ROUNDS):
            send(f"key-{r % 3}", 20)
            active = max(_logs(partition))
            seen_active[active] = _logs(partition)[active]
            assert shipper.poll().errors == 0
            send(f"key-{(r + 1) % 3}", 20)  # appended after the shipper looked
            roll()
            assert shipper.poll().errors == 0
        send("last-key")  # alone in the last segment to ship
        active = roll()
        fs, path = shipper.storage.resolve(f"{target}/{TOPIC}-0")
        deadline = time.monotonic() + _WAIT_S
        while (last := PartitionManifest(fs, path).last()) is None or last.end < active:
            assert time.monotonic() < deadline, "the last rolled segment was not shipped"
            result = shipper.poll()  # until the broker's checkpoint has the high watermark
            assert result.errors == 0 and result.gaps == 0 and result.damaged == 0
            time.sleep(0.05)

        # The cleaner rewrites what was shipped; nothing is shipped again, nothing is a gap.
        deadline = time.monotonic() + _WAIT_S
        entries = manifest_entries(PartitionManifest(fs, path))
        sizes = {e.start: e.size for e in entries}
        while all(_logs(partition).get(b) == s for b, s in sizes.items()):
            assert time.monotonic() < deadline, "the broker's cleaner did not run"
            time.sleep(0.1)  # waiting for the broker's cleaner
        again = shipper.poll()
        assert (again.shipped, again.gaps) == (0, 0)
        producer.flush(30)

    assert [e.kind for e in entries] == ["shipped"] * len(entries)
    assert entries[-1].end == active
    # Every segment the shipper saw active was shipped whole, never as it was then; those
    # appended to after the look (at least one: a roll takes segment.ms) with what came after.
    assert all(sizes[b] >= size for b, size in seen_active.items())
    assert any(sizes[b] > size for b, size in seen_active.items())

    work = tmp_path / "job"
    work.mkdir()
    lines = [
        "[source]",
        f"paths = [{json.dumps(target)}]",
        "rolled_only = false",
        "[state]",
        f'table = "{work / "state"}"',
        "[output]",
        f'path = "{work / "out"}"',
        "[stream]",
        f'checkpoint = "{work / "checkpoint"}"',
        "[spark]",
        *(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in minio.spark_settings().items()),
    ]
    job = work / "compactor.toml"
    job.write_text("\n".join(lines) + "\n")
    done = run_cli(
        "run",
        "--config",
        job,
        "--once",
        cwd=work,
        spark_conf_dir=spark_conf_dir,
        env={"AWS_EC2_METADATA_DISABLED": "true"},
    )
    assert done.returncode == 0, done.stderr

    model: dict[bytes, tuple[int, bytes]] = {}
    for offset in sorted(produced):
        if offset < active:
            key, value = produced[offset]
            model[key] = (offset, value)
    rows = delta_rows(load_config(job), str(work / "state")).to_pylist()
    state = {r["key"]: (r["offset"], r["value"]) for r in rows if r["topic"] == TOPIC}
    assert b"last-key" in state  # the last shipped segment is read
    assert state == model
