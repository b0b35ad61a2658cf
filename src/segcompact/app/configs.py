"""``segcompact configs --describe``: each topic's effective settings and where they come from."""

from __future__ import annotations

from collections.abc import Sequence

from segcompact.app.reply import Reply
from segcompact.app.session import ensured
from segcompact.config import load_config
from segcompact.config.describe import text
from segcompact.errors import UsageError
from segcompact.format.logdir import is_topic_name


def describe(config_path: str, topics: Sequence[str], *, jvm_output: str | None) -> Reply:
    """The settings of ``topics`` (none named: those of ``[topics]`` and the defaults)."""
    config = load_config(config_path)
    for topic in topics:
        if not is_topic_name(topic):
            raise UsageError(f"--topic {topic!r}: not a Kafka topic name")
    unnamed = [t for t in topics if t not in config.topics]
    if unnamed:  # as kafka-configs.sh, a topic that does not exist is an error
        from segcompact.discovery import source_topics
        from segcompact.status import table_topics

        known = source_topics(config.source.paths, config.storage)
        if not set(unnamed) <= known:
            known |= table_topics(config, ensured(config, jvm_output))
        for topic in unnamed:
            if topic not in known:
                raise UsageError(
                    f"--topic {topic!r}: no such topic (not in [topics], not in the job's "
                    f"tables, no {topic}-<partition> directory under [source] paths)"
                )
    shown: list[str | None] = [*topics] if topics else [*sorted(config.topics), None]
    return Reply((text(config, shown),))
