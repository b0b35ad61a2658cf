"""The test broker's cluster ids: Kafka's Uuid text form, never read as a command-line option."""

from __future__ import annotations

import base64

from tests.support.kafka_broker import _cluster_id


def test_a_cluster_id_is_a_kafka_uuid_that_never_starts_with_a_dash() -> None:
    ids = [_cluster_id() for _ in range(2000)]  # 1 in 64 random ids starts with "-"
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert len(set(ids)) == len(ids)
