"""The configuration's public model: the typed, checked values the rest of segcompact reads.

Topic settings carry Kafka's names' meanings and Kafka's defaults. Locations are kept exactly
as written; :meth:`CompactorConfig.with_base_dir` pins relative local paths to a folder.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

from segcompact.config.locations import is_table_name, resolve_location
from segcompact.errors import ConfigError
from segcompact.format.attributes import Compression

if TYPE_CHECKING:
    from segcompact.storage import Storage

LONG_MAX = 2**63 - 1  # Kafka's long, as in *.ms settings
INT_MAX = 2**31 - 1  # Kafka's int, as in *.bytes settings
# The longest duration a *_ms / *.ms setting may hold: 100 years. The job adds them to times
# (a deadline is appended + gdpr.deletion.sla.ms, a horizon now + delete.retention.ms, a lease
# expires at now + lease_timeout_ms) and stores the sums as Delta timestamps (microseconds in a
# long) and shows them as Python datetimes (year 9999 at most): with this bound every such sum
# fits for any clock before the year 9800. Kafka's Long.MAX_VALUE overflows both. Only
# max.compaction.lag.ms keeps Kafka's whole range: it is compared, never added, and its
# default, Long.MAX_VALUE, means "never".
MAX_MS = 100 * 365 * 86_400_000
# The shortest [stream] trigger_interval: with 0 Spark asks the source for new segments every
# 10 ms while none come (its polling delay), listing every source root each time.
MIN_TRIGGER_MS = 100


class ChoiceEnum(enum.StrEnum):
    """A setting with a fixed set of spellings, matched in any case."""

    @classmethod
    def from_str(cls, value: str) -> Self:
        """The member spelled ``value`` (any case); ``ValueError`` listing the valid ones."""
        for member in cls:
            if member.value == value.strip().lower():
                return member
        raise ValueError(f"unknown {cls.__name__} {value!r}; expected one of {cls.choices()}")

    @classmethod
    def choices(cls) -> str:
        return ", ".join(m.value for m in cls)


class CompactionStrategy(ChoiceEnum):
    """``compaction.strategy`` (KIP-280): which of two records with the same key wins."""

    OFFSET = "offset"
    TIMESTAMP = "timestamp"
    HEADER = "header"


class TombstoneMode(ChoiceEnum):
    """``compaction.tombstone.mode`` (KIP-87): what marks a record as a delete."""

    NULL_VALUE = "null-value"
    HEADER = "header"
    ATTRIBUTE = "attribute"


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic's compaction settings, fully resolved; the defaults are Kafka's.

    :func:`~segcompact.config.load_config` checks every value; direct construction (tests)
    checks only the cross-field rules that no compaction code should ever have to doubt.
    """

    compaction_strategy: CompactionStrategy = CompactionStrategy.OFFSET
    strategy_header: str | None = None
    tombstone_mode: TombstoneMode = TombstoneMode.NULL_VALUE
    tombstone_header: str = "tombstone"
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    segment_bytes: int = 1_073_741_824
    index_interval_bytes: int = 4096
    # The codec to write with; None is Kafka's "producer": keep the input's codec.
    compression_type: Compression | None = None
    gdpr_deletion_sla_ms: int | None = None

    def __post_init__(self) -> None:
        if self.compaction_strategy is CompactionStrategy.HEADER and not self.strategy_header:
            raise ConfigError("compaction.strategy header needs compaction.strategy.header")
        if self.max_compaction_lag_ms < self.min_compaction_lag_ms:
            raise ConfigError("max.compaction.lag.ms is less than min.compaction.lag.ms")


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """``[source]``: roots in Kafka log-dir layout."""

    paths: tuple[str, ...]
    rolled_only: bool = True


@dataclass(frozen=True, slots=True)
class StateConfig:
    """``[state]``: Delta tables, each a path or (on Databricks) a catalog table name."""

    # Required, as are [output] path and [stream] checkpoint: a job writes only where its
    # config says, never into a default folder two jobs could share.
    table: str
    # The others default to a sibling of the state table ("" until resolved): two jobs with
    # different state tables never share one by accident.
    partitions_table: str = ""
    pending_table: str = ""  # records of transactions still undecided
    young_table: str = ""  # records younger than min.compaction.lag.ms, kept raw
    ledger_table: str = ""  # deletion ledger for the GDPR SLA
    # A local file holding the ledger's secret (segcompact.erasure.keyhash), for when
    # SEGCOMPACT_LEDGER_SECRET is not set; a local path, resolved as the locations are.
    ledger_secret_file: str | None = None
    # delta.deletedFileRetentionDuration of every table; None: derived from the smallest SLA.
    deleted_file_retention_ms: int | None = None

    def tables(self) -> tuple[str, ...]:
        """Every Delta table, the state table first."""
        return (
            self.table,
            self.partitions_table,
            self.pending_table,
            self.young_table,
            self.ledger_table,
        )

    def __post_init__(self) -> None:
        for name, suffix in _SIBLINGS.items():
            if not getattr(self, name):
                object.__setattr__(self, name, sibling(self.table, suffix))


# The keys that hold a location: (section, key, is a Delta table). [source] paths come first.
LOCATION_KEYS = (
    ("state", "table", True),
    ("state", "partitions_table", True),
    ("state", "pending_table", True),
    ("state", "young_table", True),
    ("state", "ledger_table", True),
    ("output", "path", False),
    ("stream", "checkpoint", False),
)

# The tables a config may leave unnamed, and the suffix their default adds to the state table's.
_SIBLINGS = {
    "partitions_table": "partitions",
    "pending_table": "pending_txn",
    "young_table": "young",
    "ledger_table": "deletion_ledger",
}


def sibling(table: str, suffix: str) -> str:
    """The table beside ``table`` (a path, URI or catalog name) named with ``suffix``:
    ``data/state`` → ``data/state_young``, ``main.db.state`` → ``main.db.state_young``."""
    return f"{table.rstrip('/')}_{suffix}"


@dataclass(frozen=True, slots=True)
class OutputConfig:
    """``[output]``: where re-materialised segments go."""

    path: str


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """``[stream]``: the streaming query and the materialiser's clock.

    ``trigger_interval`` is handed to Spark as written (after the parser checked it).
    ``materialize_check_interval_ms`` lives here and not with the topic keys: it is how often
    the one driver-side timer wakes up to evaluate every partition's triggers, not a property
    of a topic, and Kafka has no topic-level name for it (the cleaner's nearest knob,
    ``log.cleaner.backoff.ms``, is broker-wide too).
    """

    checkpoint: str
    trigger_interval: str = "10 seconds"
    max_segments_per_batch: int = 0  # 0: no limit
    materialize_check_interval_ms: int = 60_000
    # How long a job's lease on its locations outlives its last renewal (segcompact.lease).
    lease_timeout_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """``[metrics]``: the job's Prometheus endpoint, ``http://<host>:<port>/metrics``; none
    unless a port is named (nothing listens that the config did not ask for). ``spark``: the
    same figures in Spark's own metrics system too, for the sinks a cluster configures."""

    port: int | None = None
    host: str = "127.0.0.1"  # 0.0.0.0 for a scraper on another host or pod
    spark: bool = False


@dataclass(frozen=True, slots=True)
class CompactorConfig:
    """A whole configuration file. ``topics`` holds the resolved topics named in the file."""

    source: SourceConfig
    state: StateConfig
    output: OutputConfig
    stream: StreamConfig
    metrics: MetricsConfig = MetricsConfig()
    # [spark]: Spark and Hadoop settings for the session; the spark.hadoop.* ones also open
    # the file systems of the Python side (segcompact.storage.Storage).
    spark: Mapping[str, str] = field(default_factory=dict, hash=False)
    defaults: TopicConfig = TopicConfig()
    topics: Mapping[str, TopicConfig] = field(default_factory=dict, hash=False)
    # The topic settings each scope gave, by Kafka key, as parsed: "[defaults]" and every
    # [topics] name (``configs --describe`` shows where each effective value came from).
    given: Mapping[str, Mapping[str, object]] = field(default_factory=dict, hash=False)

    def owned(self) -> tuple[str, ...]:
        """Every location segcompact writes: its tables, the output and the checkpoint."""
        return (*self.state.tables(), self.output.path, self.stream.checkpoint)

    @property
    def storage(self) -> Storage:
        """How the Python side opens this job's locations: ``[spark]``'s Hadoop settings."""
        from segcompact.storage import Storage

        return Storage.of(self.spark)

    def check_storage(self) -> None:
        """Raise a :class:`ConfigError` naming the key of a location whose file system cannot
        be used here (unknown scheme, missing library, no credentials): at start, before any
        work, rather than inside a batch."""
        storage = self.storage
        for path in self.source.paths:
            storage.check("[source] paths", path)
        for section, key, table in LOCATION_KEYS:
            location = getattr(getattr(self, section), key)
            if not (table and is_table_name(location)):
                storage.check(f"[{section}] {key}", location, table=table)

    def topic(self, name: str) -> TopicConfig:
        """Settings for ``name``: its ``[topics]`` entry, else the resolved ``[defaults]``."""
        return self.topics.get(name, self.defaults)

    def sla_ms(self, name: str) -> int | None:
        """``gdpr.deletion.sla.ms`` of ``name``; None when it has no deletion deadline."""
        return self.topic(name).gdpr_deletion_sla_ms

    def with_base_dir(self, base_dir: str | os.PathLike[str]) -> CompactorConfig:
        """A copy whose relative local paths are made absolute under ``base_dir``.

        URIs, absolute paths and catalog table names are left as they are.
        """

        def loc(value: str, *, table: bool = False) -> str:
            return resolve_location(value, base_dir, table=table)

        return dataclasses.replace(
            self,
            source=dataclasses.replace(self.source, paths=tuple(map(loc, self.source.paths))),
            state=dataclasses.replace(
                self.state,
                table=loc(self.state.table, table=True),
                partitions_table=loc(self.state.partitions_table, table=True),
                pending_table=loc(self.state.pending_table, table=True),
                young_table=loc(self.state.young_table, table=True),
                ledger_table=loc(self.state.ledger_table, table=True),
                ledger_secret_file=None
                if self.state.ledger_secret_file is None
                else os.path.join(base_dir, self.state.ledger_secret_file),
            ),
            output=OutputConfig(path=loc(self.output.path)),
            stream=dataclasses.replace(self.stream, checkpoint=loc(self.stream.checkpoint)),
        )
