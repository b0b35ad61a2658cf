"""``segcompact configs --describe``: each topic's effective settings and where each came from,
in ``kafka-configs.sh --describe --all``'s shape: ``key=value`` and its synonyms from the most
specific source to Kafka's default (``TOPIC_CONFIG``: the topic's ``[topics]`` entry,
``DEFAULTS_CONFIG``: ``[defaults]``, ``DEFAULT_CONFIG``: Kafka's default)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from segcompact.config.keys import TOPIC_KEYS
from segcompact.config.model import CompactorConfig, TopicConfig
from segcompact.config.parser import DEFAULTS
from segcompact.format.attributes import Compression

_NONE_MEANS = {"compression.type": "producer", "gdpr.deletion.sla.ms": "none"}


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    value: str
    synonyms: tuple[tuple[str, str], ...]  # (source, value), most specific first

    def line(self) -> str:
        shown = ", ".join(f"{source}:{self.key}={value}" for source, value in self.synonyms)
        return f"{self.key}={self.value} sensitive=false synonyms={{{shown}}}"


def describe(config: CompactorConfig, topic: str | None) -> list[Setting]:
    """Every topic key of ``topic`` (named in ``[topics]`` or not; None: any topic not named),
    in Kafka's key order."""
    kafka = TopicConfig()
    effective = config.defaults if topic is None else config.topic(topic)
    out = []
    for key, spec in TOPIC_KEYS.items():
        synonyms = []
        for source, scope in (("TOPIC_CONFIG", topic), ("DEFAULTS_CONFIG", DEFAULTS)):
            given = config.given.get(scope, {}) if scope is not None else {}
            if key in given:
                synonyms.append((source, _shown(key, given[key])))
        synonyms.append(("DEFAULT_CONFIG", _shown(key, getattr(kafka, spec.attr))))
        out.append(Setting(key, _shown(key, getattr(effective, spec.attr)), tuple(synonyms)))
    return out


def text(config: CompactorConfig, topics: list[str | None]) -> str:
    """``kafka-configs.sh --describe --all``'s text for each of ``topics`` (None: any topic
    not named in ``[topics]``)."""
    blocks = []
    for topic in topics:
        entity = "topics not named in [topics]" if topic is None else f"topic {topic}"
        lines = [f"All configs for {entity} are:"]
        lines += [f"  {s.line()}" for s in describe(config, topic)]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _shown(key: str, value: object) -> str:
    """A value as a Kafka properties file would hold it."""
    if value is None:
        return _NONE_MEANS.get(key, "null")
    if isinstance(value, Compression):
        return value.label
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float):
        return repr(value)
    return str(value)
