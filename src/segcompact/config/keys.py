"""The names a config file may use: its sections, each section's keys, and topic names.

Topic-level keys use Kafka's names; the other sections use snake_case. Each key names the
dataclass field it sets and the parser of its value; each plain section names its dataclass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from segcompact.config import values as v
from segcompact.config.model import (
    INT_MAX,
    LONG_MAX,
    CompactionStrategy,
    MetricsConfig,
    OutputConfig,
    SourceConfig,
    StateConfig,
    StreamConfig,
    TombstoneMode,
)


@dataclass(frozen=True, slots=True)
class Key:
    name: str  # as written in the file
    attr: str  # the dataclass field it sets
    parse: Callable[[object], object]
    required: bool = False


def _keys(*keys: Key) -> dict[str, Key]:
    return {k.name: k for k in keys}


TOPIC_KEYS = _keys(
    Key("compaction.strategy", "compaction_strategy", v.choice(CompactionStrategy)),
    Key("compaction.strategy.header", "strategy_header", v.text),
    Key("compaction.tombstone.mode", "tombstone_mode", v.choice(TombstoneMode)),
    Key("compaction.tombstone.header", "tombstone_header", v.text),
    Key("delete.retention.ms", "delete_retention_ms", v.millis(0)),
    Key("min.compaction.lag.ms", "min_compaction_lag_ms", v.millis(0)),
    # Kafka's whole range, Long.MAX_VALUE (its default) meaning "never": it is only compared.
    Key("max.compaction.lag.ms", "max_compaction_lag_ms", v.integer(1, LONG_MAX)),
    Key("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", v.ratio),
    # Kafka's topic-level segment.bytes long allowed anything from 14 (one v0 record's
    # overhead); 4.0 raised the broker's log.segment.bytes minimum to 1 MiB (KAFKA-16368) and a
    # later fix applies it to the topic key too, moving small sizes to an internal key
    # (KAFKA-19080). Small segments are how tests exercise rolling and output at any size is
    # valid, so the older, lenient minimum is kept. Kafka's type is a 32-bit int.
    Key("segment.bytes", "segment_bytes", v.integer(14, INT_MAX)),
    Key("index.interval.bytes", "index_interval_bytes", v.integer(0, INT_MAX)),
    Key("compression.type", "compression_type", v.compression),
    Key("gdpr.deletion.sla.ms", "gdpr_deletion_sla_ms", v.sla),
)

SECTIONS: dict[str, dict[str, Key]] = {
    "source": _keys(
        Key("paths", "paths", v.paths, required=True),
        Key("rolled_only", "rolled_only", v.boolean),
    ),
    "state": _keys(
        Key("table", "table", v.location, required=True),
        Key("partitions_table", "partitions_table", v.location),
        Key("pending_table", "pending_table", v.location),
        Key("young_table", "young_table", v.location),
        Key("ledger_table", "ledger_table", v.location),
        Key("ledger_secret_file", "ledger_secret_file", v.local_path),
        Key("deleted_file_retention_ms", "deleted_file_retention_ms", v.millis(0)),
    ),
    "output": _keys(Key("path", "path", v.location, required=True)),
    "stream": _keys(
        Key("checkpoint", "checkpoint", v.location, required=True),
        Key("trigger_interval", "trigger_interval", v.interval),
        Key("max_segments_per_batch", "max_segments_per_batch", v.integer(0, INT_MAX)),
        Key("materialize_check_interval_ms", "materialize_check_interval_ms", v.millis(1)),
        Key("lease_timeout_ms", "lease_timeout_ms", v.millis(3_000)),
    ),
    "metrics": _keys(
        Key("port", "port", v.integer(1, 65_535)),
        Key("host", "host", v.text),
        Key("spark", "spark", v.boolean),
    ),
    "spark": {},  # Spark and Hadoop settings, passed as they are
    "defaults": TOPIC_KEYS,
    "topics": {},  # a table of topic names, each holding TOPIC_KEYS
}

# The dataclass each section other than [defaults] and [topics] makes.
SECTION_TYPES: dict[str, type] = {
    "source": SourceConfig,
    "state": StateConfig,
    "output": OutputConfig,
    "stream": StreamConfig,
    "metrics": MetricsConfig,
}

# Kafka topic settings people copy from a broker that segcompact has no use for.
KAFKA_ONLY = frozenset(
    {
        "cleanup.policy",
        "retention.ms",
        "retention.bytes",
        "local.retention.ms",
        "local.retention.bytes",
        "remote.storage.enable",
        "segment.ms",
        "segment.jitter.ms",
        "segment.index.bytes",
        "message.timestamp.type",
        "max.message.bytes",
        "min.insync.replicas",
        "file.delete.delay.ms",
        "flush.ms",
        "flush.messages",
        "preallocate",
        "unclean.leader.election.enable",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
    }
)
