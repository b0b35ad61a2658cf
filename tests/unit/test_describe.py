"""``segcompact configs --describe``: each topic's effective settings and where each came from,
as ``kafka-configs.sh --describe --all`` prints a topic's."""

from __future__ import annotations

from segcompact.config import parse_config
from segcompact.config.describe import describe, text
from tests.support.config import located

CONFIG = located(
    {
        "source": {"paths": ["in"]},
        "defaults": {"delete.retention.ms": 5_000, "compression.type": "zstd"},
        "topics": {
            "orders": {"compaction.strategy": "Timestamp", "delete.retention.ms": "7000"},
            "users": {"gdpr.deletion.sla.ms": 86_400_000},
        },
    }
)


def test_each_value_names_its_sources_most_specific_first() -> None:
    config = parse_config(CONFIG, "c.toml")
    orders = {s.key: s for s in describe(config, "orders")}
    assert orders["delete.retention.ms"].line() == (
        "delete.retention.ms=7000 sensitive=false synonyms={TOPIC_CONFIG:delete.retention.ms=7000, "
        "DEFAULTS_CONFIG:delete.retention.ms=5000, DEFAULT_CONFIG:delete.retention.ms=86400000}"
    )
    assert orders["compaction.strategy"].value == "timestamp"  # as Kafka spells it
    assert orders["compression.type"].synonyms == (
        ("DEFAULTS_CONFIG", "zstd"),
        ("DEFAULT_CONFIG", "producer"),
    )
    assert orders["gdpr.deletion.sla.ms"].value == "none"
    users = {s.key: s for s in describe(config, "users")}
    assert users["gdpr.deletion.sla.ms"].synonyms[0] == ("TOPIC_CONFIG", "86400000")
    assert users["delete.retention.ms"].value == "5000"


def test_a_topic_not_named_takes_the_defaults_and_every_key_is_shown() -> None:
    config = parse_config(CONFIG, "c.toml")
    other = describe(config, "clicks")
    assert [s.key for s in other] == [s.key for s in describe(config, None)]
    assert len(other) == 12
    assert all(source != "TOPIC_CONFIG" for s in other for source, _ in s.synonyms)
    assert {s.key: s.value for s in other}["delete.retention.ms"] == "5000"
    shown = text(config, ["orders", None])
    assert shown.startswith("All configs for topic orders are:\n  compaction.strategy=")
    assert "All configs for topics not named in [topics] are:" in shown
