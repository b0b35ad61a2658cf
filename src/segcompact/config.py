"""The compactor's configuration: read ``conf/compactor.toml``, check it, resolve topic settings.

Pure: stdlib ``tomllib`` and dataclasses only, so the CLI can reject a bad file before it starts
a JVM. Everything wrong with a file is a :class:`ConfigError` on one line naming the file, the
section and key, the value found and what is allowed.

Topic-level keys use Kafka's names and Kafka's defaults; a topic's settings resolve as
Kafka's default < ``[defaults]`` < ``[topics."<name>"]``. Numbers may be TOML numbers or
strings (``"86400000"``), as in Kafka's property files.

Locations are kept exactly as written. A relative path is relative to the working directory
of the process that uses it, not to the config file's folder: DESIGN's examples
(``"data/state"``) are run from the repository root, and on a cluster a relative Hadoop path
means the user's home on the default file system, which only Spark can resolve. Callers that
want local paths pinned to a folder (the demo's ``--workdir``) use
:meth:`CompactorConfig.with_base_dir`.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import json
import math
import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from segcompact.errors import ConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

__all__ = [
    "INT_MAX",
    "LONG_MAX",
    "CompactionStrategy",
    "CompactorConfig",
    "OutputConfig",
    "SourceConfig",
    "StateConfig",
    "StreamConfig",
    "TombstoneMode",
    "TopicConfig",
    "is_table_name",
    "is_uri",
    "load_config",
    "parse_config",
    "resolve_location",
]


class _ChoiceEnum(enum.StrEnum):
    @classmethod
    def from_str(cls, value: str) -> Any:
        """The member spelled ``value`` (any case); ``ValueError`` listing the valid ones."""
        for member in cls:
            if member.value == value.strip().lower():
                return member
        raise ValueError(f"unknown {cls.__name__} {value!r}; expected one of {cls.choices()}")

    @classmethod
    def choices(cls) -> str:
        return ", ".join(m.value for m in cls)


class CompactionStrategy(_ChoiceEnum):
    """``compaction.strategy`` (KIP-280): which of two records with the same key wins."""

    OFFSET = "offset"
    TIMESTAMP = "timestamp"
    HEADER = "header"

    @classmethod
    def from_str(cls, value: str) -> CompactionStrategy:
        return super().from_str(value)  # type: ignore[no-any-return]


class TombstoneMode(_ChoiceEnum):
    """``compaction.tombstone.mode`` (KIP-87): what marks a record as a delete."""

    NULL_VALUE = "null-value"
    HEADER = "header"
    ATTRIBUTE = "attribute"

    @classmethod
    def from_str(cls, value: str) -> TombstoneMode:
        return super().from_str(value)  # type: ignore[no-any-return]


# Kafka's topic-level names; "none" is accepted as the producer-side spelling of "uncompressed".
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """One topic's compaction settings, fully resolved; the defaults are Kafka's.

    :func:`load_config` checks every value; direct construction (tests) checks only the
    cross-field rules that no compaction code should ever have to doubt.
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
    compression_type: str = "producer"
    gdpr_deletion_sla_ms: int | None = None

    def __post_init__(self) -> None:
        if self.compaction_strategy is CompactionStrategy.HEADER and not self.strategy_header:
            raise ConfigError("compaction.strategy header needs compaction.strategy.header")
        if self.max_compaction_lag_ms < self.min_compaction_lag_ms:
            raise ConfigError("max.compaction.lag.ms is less than min.compaction.lag.ms")

    @property
    def output_codec(self) -> str | None:
        """The codec to write with, as ``Compression.from_str`` spells it; None: keep input's."""
        if self.compression_type == "producer":
            return None
        return "none" if self.compression_type == "uncompressed" else self.compression_type

    def to_properties(self) -> dict[str, str]:
        """The settings under Kafka's names as property strings (unset optional keys left out)."""
        out: dict[str, str] = {}
        for key in _TOPIC_KEYS.values():
            value = getattr(self, key.attr)
            if value is not None:
                out[key.name] = _kafka_str(value)
        return out


@dataclass(frozen=True, slots=True)
class SourceConfig:
    """``[source]``: roots in Kafka log-dir layout."""

    paths: tuple[str, ...]
    rolled_only: bool = True


@dataclass(frozen=True, slots=True)
class StateConfig:
    """``[state]``: Delta tables, each a path or (on Databricks) a catalog table name."""

    table: str = "data/state"
    partitions_table: str = "data/partitions"
    pending_table: str = "data/pending_txn"  # records of transactions still undecided
    young_table: str = "data/young"  # records younger than min.compaction.lag.ms, kept raw
    ledger_table: str = "data/deletion_ledger"  # deletion ledger for the GDPR SLA


@dataclass(frozen=True, slots=True)
class OutputConfig:
    """``[output]``: where re-materialised segments go."""

    path: str = "data/compacted"


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """``[stream]``: the streaming query and the materialiser's clock.

    ``materialize_check_interval_ms`` lives here and not with the topic keys: it is how often
    the one driver-side timer wakes up to evaluate every partition's triggers, not a property
    of a topic, and Kafka has no topic-level name for it (the cleaner's nearest knob,
    ``log.cleaner.backoff.ms``, is broker-wide too).
    """

    checkpoint: str = "checkpoints/segcompact"
    trigger_interval: str = "10 seconds"
    max_segments_per_batch: int = 0  # 0: no limit
    materialize_check_interval_ms: int = 60_000

    @property
    def trigger_interval_ms(self) -> int:
        """``trigger_interval`` in milliseconds (microseconds rounded down)."""
        return _interval_micros(self.trigger_interval) // 1000


@dataclass(frozen=True, slots=True)
class CompactorConfig:
    """A whole configuration file. ``topics`` holds the resolved topics named in the file."""

    source: SourceConfig
    state: StateConfig = StateConfig()
    output: OutputConfig = OutputConfig()
    stream: StreamConfig = StreamConfig()
    defaults: TopicConfig = TopicConfig()
    topics: Mapping[str, TopicConfig] = field(default_factory=dict, hash=False)
    config_file: str | None = field(default=None, compare=False)

    def topic(self, name: str) -> TopicConfig:
        """Settings for ``name``: its ``[topics]`` entry, else the resolved ``[defaults]``."""
        return self.topics.get(name, self.defaults)

    @property
    def topic_overrides(self) -> tuple[str, ...]:
        """The topics that have a ``[topics."<name>"]`` section, in file order."""
        return tuple(self.topics)

    def with_base_dir(self, base_dir: str | os.PathLike[str]) -> CompactorConfig:
        """A copy whose relative local paths are made absolute under ``base_dir``.

        URIs, absolute paths and catalog table names are left as they are.
        """

        def loc(value: str, *, table: bool = False) -> str:
            return resolve_location(value, base_dir, table=table)

        return dataclasses.replace(
            self,
            source=dataclasses.replace(self.source, paths=tuple(map(loc, self.source.paths))),
            state=StateConfig(
                table=loc(self.state.table, table=True),
                partitions_table=loc(self.state.partitions_table, table=True),
                pending_table=loc(self.state.pending_table, table=True),
                young_table=loc(self.state.young_table, table=True),
                ledger_table=loc(self.state.ledger_table, table=True),
            ),
            output=OutputConfig(path=loc(self.output.path)),
            stream=dataclasses.replace(self.stream, checkpoint=loc(self.stream.checkpoint)),
        )


# --- locations ------------------------------------------------------------------------------

# A scheme of two or more letters, so that a Windows drive ("C:") is not taken for one.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
_IDENT = r"(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_TABLE_NAME = re.compile(rf"^{_IDENT}(?:\.{_IDENT}){{1,2}}$")


def is_uri(location: str) -> bool:
    """True for ``s3a://b/x``, ``abfss://…``, ``dbfs:/x``, ``file:/x`` and the like."""
    return _URI.match(location) is not None


def is_table_name(location: str) -> bool:
    """True for a catalog name such as ``main.segcompact.state`` or ``db.state``.

    A two- or three-part dotted identifier with no slash; write a local folder whose name has a
    dot as ``./state.delta``.
    """
    return "/" not in location and _TABLE_NAME.match(location) is not None


def resolve_location(
    location: str, base_dir: str | os.PathLike[str], *, table: bool = False
) -> str:
    """``location`` joined to ``base_dir`` if it is a relative local path, else unchanged."""
    if is_uri(location) or os.path.isabs(location) or (table and is_table_name(location)):
        return location
    return os.path.normpath(os.path.join(os.path.abspath(base_dir), location))


# --- loading --------------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> CompactorConfig:
    """Read and check a TOML config file; :class:`ConfigError` on any problem."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise ConfigError(
            _one_line(f"{name}: cannot read config file: {e.strerror or e}")
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(_one_line(f"{name}: invalid TOML: {e}")) from None
    except UnicodeDecodeError as e:
        raise ConfigError(_one_line(f"{name}: invalid TOML: not UTF-8 at byte {e.start}")) from None
    return parse_config(data, name)


def parse_config(data: Mapping[str, Any], source: str) -> CompactorConfig:
    """Check parsed TOML ``data``; ``source`` names the file in messages."""
    return _Parser(source).parse(data)


class _Invalid(Exception):
    """A value is not allowed; ``args[0]`` says what is ("expected …")."""


# --- value parsers: take a TOML value, return the typed value or raise _Invalid ---------------

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_DECIMAL = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


def _integer(lo: int, hi: int, *, also: str = "") -> Callable[[object], int]:
    expected = f"expected an integer from {lo} to {hi}{also}"

    def parse(value: object) -> int:
        # Kafka's longs have at most 19 digits; the length cap also keeps int() cheap.
        if isinstance(value, str) and len(value) < 40 and _INTEGER.match(value.strip()):
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise _Invalid(expected)
        return value

    return parse


def _ratio(value: object) -> float:
    if isinstance(value, str) and _DECIMAL.match(value.strip()):
        value = float(value.strip())
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or not 0.0 <= value <= 1.0
    ):
        raise _Invalid("expected a number from 0.0 to 1.0")
    return float(value)


def _boolean(value: object) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise _Invalid("expected true or false")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _Invalid("expected a non-empty string")
    return value


def _choice(enum_type: type[_ChoiceEnum]) -> Callable[[object], _ChoiceEnum]:
    def parse(value: object) -> _ChoiceEnum:
        try:
            if isinstance(value, str):
                return enum_type.from_str(value)  # type: ignore[no-any-return]
        except ValueError:
            pass
        raise _Invalid(f"expected one of {enum_type.choices()}")

    return parse


def _compression(value: object) -> str:
    name = value.strip().lower() if isinstance(value, str) else None
    if name == "none":
        return "uncompressed"
    if name not in COMPRESSION_TYPES:
        raise _Invalid(f"expected one of {', '.join(COMPRESSION_TYPES)} (or none = uncompressed)")
    return name


_positive_long = _integer(1, LONG_MAX, also=', or "none"')


def _sla(value: object) -> int | None:
    if isinstance(value, str) and value.strip().lower() == "none":
        return None
    return _positive_long(value)


def _paths(value: object) -> tuple[str, ...]:
    expected = "expected a non-empty list of non-empty strings"
    if not isinstance(value, list) or not value:
        raise _Invalid(expected)
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _Invalid(expected)
    if len(set(value)) != len(value):
        raise _Invalid(expected + ", each listed once")
    return tuple(value)


_INTERVAL_UNITS_US = {
    "microsecond": 1,
    "millisecond": 1000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 604_800_000_000,
}
_INTERVAL_PART = re.compile(r"([0-9]+)\s+([A-Za-z]+)")
_INTERVAL = re.compile(
    r"^\s*(?:interval\s+)?[0-9]+\s+[A-Za-z]+(?:\s+[0-9]+\s+[A-Za-z]+)*\s*$", re.I
)


def _interval_micros(text: str) -> int:
    """Microseconds in a Spark processing-time interval ("10 seconds", "1 minute 30 seconds").

    Spark's triggers refuse months and years; fractions are left out as rarely wanted.
    """
    if not _INTERVAL.match(text):
        raise ValueError(text)
    total = 0
    for number, unit in _INTERVAL_PART.findall(text):
        scale = _INTERVAL_UNITS_US.get(unit.lower().removesuffix("s"))
        if scale is None:
            raise ValueError(text)
        total += int(number) * scale
    return total


def _interval(value: object) -> str:
    try:
        if isinstance(value, str):
            _interval_micros(value)
            return value.strip()
    except ValueError:
        pass
    units = ", ".join(f"{u}s" for u in _INTERVAL_UNITS_US)
    raise _Invalid(
        f'expected a Spark interval "<n> <unit>" such as "10 seconds", unit one of {units}'
    )


# --- the keys each section allows -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Key:
    name: str  # as written in the file
    attr: str  # the dataclass field it sets
    parse: Callable[[object], object]
    required: bool = False


def _keys(*keys: _Key) -> dict[str, _Key]:
    return {k.name: k for k in keys}


_TOPIC_KEYS = _keys(
    _Key("compaction.strategy", "compaction_strategy", _choice(CompactionStrategy)),
    _Key("compaction.strategy.header", "strategy_header", _text),
    _Key("compaction.tombstone.mode", "tombstone_mode", _choice(TombstoneMode)),
    _Key("compaction.tombstone.header", "tombstone_header", _text),
    _Key("delete.retention.ms", "delete_retention_ms", _integer(0, LONG_MAX)),
    _Key("min.compaction.lag.ms", "min_compaction_lag_ms", _integer(0, LONG_MAX)),
    _Key("max.compaction.lag.ms", "max_compaction_lag_ms", _integer(1, LONG_MAX)),
    _Key("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", _ratio),
    # Kafka's topic-level segment.bytes long allowed anything from 14 (one v0 record's
    # overhead); 4.0 raised the broker's log.segment.bytes minimum to 1 MiB (KAFKA-16368) and a
    # later fix applies it to the topic key too, moving small sizes to an internal key
    # (KAFKA-19080). Small segments are how tests exercise rolling and output at any size is
    # valid, so the older, lenient minimum is kept. Kafka's type is a 32-bit int.
    _Key("segment.bytes", "segment_bytes", _integer(14, INT_MAX)),
    _Key("index.interval.bytes", "index_interval_bytes", _integer(0, INT_MAX)),
    _Key("compression.type", "compression_type", _compression),
    _Key("gdpr.deletion.sla.ms", "gdpr_deletion_sla_ms", _sla),
)

_SECTIONS: dict[str, dict[str, _Key]] = {
    "source": _keys(
        _Key("paths", "paths", _paths, required=True),
        _Key("rolled_only", "rolled_only", _boolean),
    ),
    "state": _keys(
        _Key("table", "table", _text),
        _Key("partitions_table", "partitions_table", _text),
        _Key("pending_table", "pending_table", _text),
        _Key("young_table", "young_table", _text),
        _Key("ledger_table", "ledger_table", _text),
    ),
    "output": _keys(_Key("path", "path", _text)),
    "stream": _keys(
        _Key("checkpoint", "checkpoint", _text),
        _Key("trigger_interval", "trigger_interval", _interval),
        _Key("max_segments_per_batch", "max_segments_per_batch", _integer(0, INT_MAX)),
        _Key(
            "materialize_check_interval_ms", "materialize_check_interval_ms", _integer(1, LONG_MAX)
        ),
    ),
    "defaults": _TOPIC_KEYS,
    "topics": {},  # a table of topic names, each holding _TOPIC_KEYS
}

# Kafka topic settings people copy from a broker that segcompact has no use for.
_KAFKA_ONLY = frozenset(
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

# Kafka's rules for a topic name (org.apache.kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

# Which field of CompactorConfig each location key sets, in the order they are checked.
_LOCATIONS = (
    ("state", "table", True),
    ("state", "partitions_table", True),
    ("state", "pending_table", True),
    ("state", "young_table", True),
    ("state", "ledger_table", True),
    ("output", "path", False),
    ("stream", "checkpoint", False),
)


@dataclass(frozen=True, slots=True)
class _Setting:
    """A value as it was found: where, under which key, raw and parsed."""

    where: str  # "[defaults]", '[topics."orders"]', or "Kafka's default"
    key: str
    raw: object
    value: Any


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, key: str | None, raw: object, problem: str) -> ConfigError:
        head = where if key is None else f"{where} {_show_key(key)}"
        shown = "" if raw is _MISSING else f" = {_show(raw)}"
        return ConfigError(_one_line(f"{self.source}: {head}{shown}: {problem}"))

    def parse(self, data: Mapping[str, Any]) -> CompactorConfig:
        for name, value in data.items():
            if name not in _SECTIONS:
                hint = _suggest(name, _SECTIONS, lambda s: f"[{s}]")
                raise self.fail(
                    f"[{_show_key(name)}]" if isinstance(value, dict) else _show_key(name),
                    None,
                    _MISSING if isinstance(value, dict) else value,
                    f"unknown section{hint} (sections: {', '.join(_SECTIONS)})",
                )
            if not isinstance(value, dict):
                raise self.fail(_show_key(name), None, value, f"expected a table [{name}]")

        found: dict[str, dict[str, _Setting]] = {
            name: self.section(f"[{name}]", data.get(name, {}), keys)
            for name, keys in _SECTIONS.items()
            if name not in ("defaults", "topics")
        }

        def values(name: str) -> dict[str, Any]:
            return {s.key: s.value for s in found[name].values()}

        def make(cls: Any, name: str) -> Any:
            return cls(**{_SECTIONS[name][k].attr: v for k, v in values(name).items()})

        defaults = self.section("[defaults]", data.get("defaults", {}), _TOPIC_KEYS)
        resolved_defaults = self.resolve("[defaults]", defaults, {})
        topics: dict[str, TopicConfig] = {}
        for name, table in data.get("topics", {}).items():
            where = f"[topics.{_show(name)}]"
            if not _TOPIC_NAME.match(name) or name in (".", ".."):
                raise self.fail(
                    where,
                    None,
                    _MISSING,
                    f"invalid topic name {_show(name)} ({len(name)} characters): expected 1 to 249 "
                    "characters from "
                    "a-z A-Z 0-9 . _ - (and not . or ..)",
                )
            if not isinstance(table, dict):
                raise self.fail(where, None, table, "expected a table of topic settings")
            own = self.section(where, table, _TOPIC_KEYS, topic=name)
            topics[name] = self.resolve(where, defaults, own)

        config = CompactorConfig(
            source=make(SourceConfig, "source"),
            state=make(StateConfig, "state"),
            output=make(OutputConfig, "output"),
            stream=make(StreamConfig, "stream"),
            defaults=resolved_defaults,
            topics=topics,
            config_file=self.source,
        )
        self.check_locations(config, found)
        return config

    def section(
        self, where: str, table: dict[str, Any], keys: Mapping[str, _Key], topic: str | None = None
    ) -> dict[str, _Setting]:
        out: dict[str, _Setting] = {}
        for key, raw in _flatten(table) if keys is _TOPIC_KEYS else table.items():
            spec = keys.get(key)
            if spec is None:
                raise self.fail(where, key, raw, self.unknown(key, keys, topic))
            if key in out:
                raise self.fail(where, key, raw, f"given twice (also = {_show(out[key].raw)})")
            try:
                out[key] = _Setting(where, key, raw, spec.parse(raw))
            except _Invalid as e:
                raise self.fail(where, key, raw, str(e.args[0])) from None
        for spec in keys.values():
            if spec.required and spec.name not in out:
                try:
                    spec.parse(_MISSING)
                except _Invalid as e:
                    raise self.fail(where, spec.name, _MISSING, f"missing; {e.args[0]}") from None
                raise AssertionError(f"{spec.name} accepts a missing value")
        return out

    def unknown(self, key: str, keys: Mapping[str, _Key], topic: str | None) -> str:
        parts = key.split(".")
        if topic is not None:
            # [topics.my.topic] nests TOML tables; the user meant the topic "my.topic".
            for i in range(1, len(parts)):
                if ".".join(parts[i:]) in keys:
                    name = ".".join([topic, *parts[:i]])
                    return (
                        f"unknown key; quote topic names that contain dots: "
                        f"[topics.{_show(name)}] {'.'.join(parts[i:])}"
                    )
        if keys is _TOPIC_KEYS and key in _KAFKA_ONLY:
            return f"a Kafka topic setting segcompact does not use (valid keys: {', '.join(keys)})"
        norm = _normal(key)
        for section, others in _SECTIONS.items():
            for other in others:
                if _normal(other) == norm:
                    if others is keys:
                        return f"unknown key; did you mean {other}?"
                    return f"unknown key; it belongs in [{section}] as {other}"
        return f"unknown key{_suggest(key, keys, str)} (valid keys: {', '.join(keys)})"

    def resolve(
        self, where: str, defaults: dict[str, _Setting], own: dict[str, _Setting]
    ) -> TopicConfig:
        chosen = {**defaults, **own}
        kafka = TopicConfig()

        def get(key: str) -> _Setting:
            if key in chosen:
                return chosen[key]
            value = getattr(kafka, _TOPIC_KEYS[key].attr)
            return _Setting(_KAFKA_DEFAULT, key, value, value)

        strategy = get("compaction.strategy")
        if (
            strategy.value is CompactionStrategy.HEADER
            and "compaction.strategy.header" not in chosen
        ):
            raise self.fail(
                strategy.where,
                strategy.key,
                strategy.raw,
                f"needs compaction.strategy.header (the header holding the version) in {where}"
                + ("" if where == "[defaults]" else " or [defaults]"),
            )
        low, high = get("min.compaction.lag.ms"), get("max.compaction.lag.ms")
        if _long(high) < _long(low):
            raise self.conflict(low, high, "")
        sla = get("gdpr.deletion.sla.ms")
        if sla.value is not None and _long(sla) < _long(low):
            # Records younger than min.compaction.lag.ms are never compacted away, so an older
            # value outlives any delete by at least that long: the SLA could never be met.
            raise self.conflict(
                low,
                sla,
                ": records younger than min.compaction.lag.ms are kept, so the SLA cannot be met",
            )
        return TopicConfig(**{_TOPIC_KEYS[k].attr: s.value for k, s in chosen.items()})

    def conflict(self, low: _Setting, high: _Setting, why: str) -> ConfigError:
        """``high`` must be at least ``low``; blame the more specific of the two."""
        if _RANK.get(high.where, 2) >= _RANK.get(low.where, 2):
            culprit, relation, other = high, ">=", low
        else:
            culprit, relation, other = low, "<=", high
        return self.fail(
            culprit.where,
            culprit.key,
            culprit.raw,
            f"expected {relation} {other.key} = {_show(other.raw)} (from {other.where}){why}",
        )

    def check_locations(
        self, config: CompactorConfig, found: dict[str, dict[str, _Setting]]
    ) -> None:
        """No two locations may be the same folder or nested: VACUUM of a Delta table deletes
        the files it does not track under its folder, and output under a source root is read
        back as input."""
        places = [_Place("[source]", "paths", p, True) for p in config.source.paths]
        for section, key, table in _LOCATIONS:
            location = getattr(getattr(config, section), key)
            places.append(_Place(f"[{section}]", key, location, key in found[section], table))
        for i, later in enumerate(places):
            for earlier in places[:i]:
                if earlier.where == later.where == "[source]":
                    continue  # duplicates are caught by _paths; nested roots are harmless
                if not _overlap(earlier, later):
                    continue
                # Blame a key the file sets rather than a default it left alone.
                culprit, other = (
                    (earlier, later) if earlier.in_file and not later.in_file else (later, earlier)
                )
                shown = _show(culprit.location) + ("" if culprit.in_file else " (the default)")
                expected = (
                    "expected a table of its own, not also"
                    if culprit.is_name
                    else "expected a location that neither is, contains nor lies inside"
                )
                raise self.fail(
                    culprit.where,
                    culprit.key,
                    _Shown(shown),
                    f"{expected} {other.where} {other.key} = {_show(other.location)}",
                )


@dataclass(frozen=True, slots=True)
class _Place:
    where: str
    key: str
    location: str
    in_file: bool
    table: bool = False  # a Delta table key, whose value may be a catalog name

    @property
    def is_name(self) -> bool:
        return self.table and is_table_name(self.location)


_KAFKA_DEFAULT = "Kafka's default"
_RANK = {_KAFKA_DEFAULT: 0, "[defaults]": 1}  # anything else is a [topics] section: 2


def _long(setting: _Setting) -> int:
    assert isinstance(setting.value, int)
    return setting.value


def _overlap(a: _Place, b: _Place) -> bool:
    if a.is_name or b.is_name:
        return a.is_name and b.is_name and _normal_name(a.location) == _normal_name(b.location)
    x, y = _normal_location(a.location), _normal_location(b.location)
    return x == y or x.startswith(y.rstrip("/") + "/") or y.startswith(x.rstrip("/") + "/")


def _normal_name(name: str) -> str:
    return name.replace("`", "").lower()


def _normal_location(location: str) -> str:
    if is_uri(location):
        return location.rstrip("/")
    return posixpath.normpath(location.replace(os.sep, "/"))


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    # Unquoted dotted keys (delete.retention.ms = 1) are nested tables in TOML; Kafka's names
    # read the same either way, so they are joined back.
    for key, value in table.items():
        if isinstance(value, dict) and value:
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _normal(key: str) -> str:
    return re.sub(r"[._ -]", "_", key.lower())


def _suggest(name: str, valid: Mapping[str, Any], show: Callable[[str], str]) -> str:
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f"; did you mean {show(close[0])}?" if close else ""


class _Missing:
    pass


_MISSING = _Missing()


class _Shown(str):
    """A value already formatted for a message."""


def _show(value: object) -> str:
    """``value`` as TOML would spell it, short and on one line."""
    if isinstance(value, _Shown):
        text = str(value)
    elif isinstance(value, str):
        text = json.dumps(value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list):
        text = "[" + ", ".join(map(_show, value)) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{_show_key(k)} = {_show(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, enum.Enum):
        text = json.dumps(str(value.value))
    else:
        text = str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _show_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9._-]+", key) else json.dumps(key)


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def _kafka_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)
