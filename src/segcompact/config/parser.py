"""Reading a config file: every key checked, topics resolved, conflicts blamed on one key.

Everything wrong with a file is a :class:`~segcompact.errors.ConfigError` on one line naming the
file, the section and key, the value found and what is allowed. When two settings conflict, the
message blames the more specific one (a ``[topics]`` key over ``[defaults]`` over Kafka's
default), and a key the file sets over a default it left alone.

A topic's settings resolve as Kafka's default < ``[defaults]`` < ``[topics."<name>"]``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from segcompact.config.keys import (
    KAFKA_ONLY,
    SECTION_TYPES,
    SECTIONS,
    TOPIC_KEYS,
    Key,
)
from segcompact.config.locations import Place, overlap
from segcompact.config.messages import Shown, one_line, show, show_key, suggest
from segcompact.config.model import LOCATION_KEYS, CompactionStrategy, CompactorConfig, TopicConfig
from segcompact.config.sla import unreachable
from segcompact.config.values import MISSING, Invalid, interval_ms
from segcompact.errors import ConfigError
from segcompact.format.logdir import MAX_TOPIC_LENGTH, TOPIC_CHARACTERS, is_topic_name

# The longest line a config file may have. Nesting is what it bounds: tomllib reads a dotted
# key or table name in time and memory that grow with the square of its parts (100,000 parts
# take gigabytes), and a dotted key or an inline table cannot span lines. Deep arrays, which
# can, end in a RecursionError.
MAX_LINE = 10_000


def load_config(path: str | os.PathLike[str]) -> CompactorConfig:
    """Read and check a TOML config file; :class:`ConfigError` on any problem."""
    name = os.fspath(path)
    data = read_toml(name)
    try:
        return parse_config(data, name)
    except RecursionError:
        raise ConfigError(_TOO_DEEP.format(name)) from None


_TOO_DEEP = "{}: nested too deeply (arrays, tables or dotted keys)"


def read_toml(name: str) -> dict[str, Any]:
    """A TOML file's tables; :class:`ConfigError` naming the file when it cannot be read."""
    try:
        with open(name, "rb") as f:
            raw = f.read()
        for number, line in enumerate(raw.splitlines(), 1):
            if len(line) > MAX_LINE:
                raise ConfigError(
                    f"{name}: line {number} is {len(line)} bytes long, "
                    f"expected at most {MAX_LINE} bytes"
                )
        return tomllib.loads(raw.decode())
    except OSError as e:
        raise ConfigError(one_line(f"{name}: cannot read config file: {e.strerror or e}")) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(one_line(f"{name}: invalid TOML: {e}")) from None
    except UnicodeDecodeError as e:
        raise ConfigError(one_line(f"{name}: invalid TOML: not UTF-8 at byte {e.start}")) from None
    except RecursionError:
        raise ConfigError(_TOO_DEEP.format(name)) from None


def parse_config(data: Mapping[str, Any], source: str) -> CompactorConfig:
    """Check parsed TOML ``data``; ``source`` names the file in messages."""
    return _Parser(source).parse(data)


@dataclass(frozen=True, slots=True)
class _Setting:
    """A value as it was found: where, under which key, raw and parsed."""

    where: str  # "[defaults]", '[topics."orders"]', or "Kafka's default"
    key: str
    raw: object
    value: Any


_KAFKA_DEFAULT = "Kafka's default"
DEFAULTS = "[defaults]"  # the scope of the [defaults] section in CompactorConfig.given
_RANK = {_KAFKA_DEFAULT: 0, "[defaults]": 1}  # anything else is a [topics] section: 2


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, key: str | None, raw: object, problem: str) -> ConfigError:
        head = where if key is None else f"{where} {show_key(key)}"
        shown = "" if raw is MISSING else f" = {show(raw)}"
        return ConfigError(one_line(f"{self.source}: {head}{shown}: {problem}"))

    def parse(self, data: Mapping[str, Any]) -> CompactorConfig:
        for name, value in data.items():
            if name not in SECTIONS:
                hint = suggest(name, SECTIONS, lambda s: f"[{s}]")
                raise self.fail(
                    f"[{show_key(name)}]" if isinstance(value, dict) else show_key(name),
                    None,
                    MISSING if isinstance(value, dict) else value,
                    f"unknown section{hint} (sections: {', '.join(SECTIONS)})",
                )
            if not isinstance(value, dict):
                raise self.fail(show_key(name), None, value, f"expected a table [{name}]")

        found: dict[str, dict[str, _Setting]] = {
            name: self.section(f"[{name}]", data.get(name, {}), SECTIONS[name])
            for name in SECTION_TYPES
        }

        def make(name: str) -> Any:
            keys = SECTIONS[name]
            return SECTION_TYPES[name](**{keys[s.key].attr: s.value for s in found[name].values()})

        defaults = self.section("[defaults]", data.get("defaults", {}), TOPIC_KEYS)
        resolved_defaults = self.resolve("[defaults]", defaults, {})
        topics: dict[str, TopicConfig] = {}
        given = {DEFAULTS: {k: s.value for k, s in defaults.items()}}
        for name, table in data.get("topics", {}).items():
            where = f"[topics.{show(name)}]"
            if not is_topic_name(name):
                raise self.fail(
                    where,
                    None,
                    MISSING,
                    f"invalid topic name {show(name)} ({len(name)} characters): expected 1 to "
                    f"{MAX_TOPIC_LENGTH} characters from {TOPIC_CHARACTERS} (and not . or ..)",
                )
            if not isinstance(table, dict):
                raise self.fail(where, None, table, "expected a table of topic settings")
            own = self.section(where, table, TOPIC_KEYS, topic=name)
            topics[name] = self.resolve(where, defaults, own)
            given[name] = {k: s.value for k, s in own.items()}

        config = CompactorConfig(
            source=make("source"),
            state=make("state"),
            output=make("output"),
            stream=make("stream"),
            metrics=make("metrics"),
            spark=self.spark(data.get("spark", {})),
            defaults=resolved_defaults,
            topics=topics,
            given=given,
        )
        self.check_locations(config, found)
        problem = unreachable(config, interval_ms(config.stream.trigger_interval))
        if problem is not None:
            raise ConfigError(one_line(f"{self.source}: {problem}"))
        return config

    def spark(self, table: Mapping[str, Any]) -> dict[str, str]:
        """``[spark]``: Spark settings (``spark.…``) as strings, as ``--conf`` would pass them.
        Unquoted dotted keys are nested tables in TOML; they are joined back."""
        out: dict[str, str] = {}
        for key, raw in _flatten(table):
            if not key.startswith("spark."):
                raise self.fail(
                    "[spark]", key, raw, 'expected a Spark setting: a key starting with "spark."'
                )
            if isinstance(raw, bool):
                out[key] = "true" if raw else "false"
            elif isinstance(raw, str | int | float):
                out[key] = str(raw)
            else:
                raise self.fail("[spark]", key, raw, "expected a string, number or boolean")
        return out

    def section(
        self, where: str, table: dict[str, Any], keys: Mapping[str, Key], topic: str | None = None
    ) -> dict[str, _Setting]:
        out: dict[str, _Setting] = {}
        for key, raw in _flatten(table) if keys is TOPIC_KEYS else table.items():
            spec = keys.get(key)
            if spec is None:
                raise self.fail(where, key, raw, self.unknown(key, keys, topic))
            if key in out:
                raise self.fail(where, key, raw, f"given twice (also = {show(out[key].raw)})")
            try:
                out[key] = _Setting(where, key, raw, spec.parse(raw))
            except Invalid as e:
                raise self.fail(where, key, raw, str(e.args[0])) from None
        for spec in keys.values():
            if spec.required and spec.name not in out:
                try:
                    spec.parse(MISSING)
                except Invalid as e:
                    raise self.fail(where, spec.name, MISSING, f"missing; {e.args[0]}") from None
                raise AssertionError(f"{spec.name} accepts a missing value")
        return out

    def unknown(self, key: str, keys: Mapping[str, Key], topic: str | None) -> str:
        parts = key.split(".")
        if topic is not None:
            # [topics.my.topic] nests TOML tables; the user meant the topic "my.topic".
            for i in range(1, len(parts)):
                if ".".join(parts[i:]) in keys:
                    name = ".".join([topic, *parts[:i]])
                    return (
                        f"unknown key; quote topic names that contain dots: "
                        f"[topics.{show(name)}] {'.'.join(parts[i:])}"
                    )
        if keys is TOPIC_KEYS and key in KAFKA_ONLY:
            return f"a Kafka topic setting segcompact does not use (valid keys: {', '.join(keys)})"
        norm = _normal(key)
        for section, others in SECTIONS.items():
            for other in others:
                if _normal(other) == norm:
                    if others is keys:
                        return f"unknown key; did you mean {other}?"
                    return f"unknown key; it belongs in [{section}] as {other}"
        return f"unknown key{suggest(key, keys, str)} (valid keys: {', '.join(keys)})"

    def resolve(
        self, where: str, defaults: dict[str, _Setting], own: dict[str, _Setting]
    ) -> TopicConfig:
        chosen = {**defaults, **own}
        kafka = TopicConfig()

        def get(key: str) -> _Setting:
            if key in chosen:
                return chosen[key]
            value = getattr(kafka, TOPIC_KEYS[key].attr)
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
        return TopicConfig(**{TOPIC_KEYS[k].attr: s.value for k, s in chosen.items()})

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
            f"expected {relation} {other.key} = {show(other.raw)} (from {other.where}){why}",
        )

    def check_locations(
        self, config: CompactorConfig, found: dict[str, dict[str, _Setting]]
    ) -> None:
        """No two locations may be the same folder or nested, however each is spelled
        (relative or absolute, through a symlink: compared where they lead): VACUUM of a Delta
        table deletes the files it does not track under its folder, and output under a source
        root is read back as input. The message shows where both lead when that is not how the
        file spells them."""
        places = [Place("[source]", "paths", p, True) for p in config.source.paths]
        for section, key, table in LOCATION_KEYS:
            location = getattr(getattr(config, section), key)
            places.append(Place(f"[{section}]", key, location, key in found[section], table))
        secret = config.state.ledger_secret_file
        if secret is not None:  # a VACUUM of a table around it would destroy the ledger's key
            places.append(Place("[state]", "ledger_secret_file", secret, True))
        for i, later in enumerate(places):
            for earlier in places[:i]:
                if earlier.where == later.where == "[source]":
                    continue  # duplicates are caught by the paths parser; nested roots are harmless
                if not overlap(earlier, later):
                    continue
                # Blame a key the file sets rather than a default it left alone.
                culprit, other = (
                    (earlier, later) if earlier.in_file and not later.in_file else (later, earlier)
                )
                shown = Shown(
                    show(culprit.location)
                    + ("" if culprit.in_file else " (the default)")
                    + _leads(culprit)
                )
                expected = (
                    "expected a table of its own, not also"
                    if culprit.is_name
                    else "expected a location that neither is, contains nor lies inside"
                )
                raise self.fail(
                    culprit.where,
                    culprit.key,
                    shown,
                    f"{expected} {other.where} {other.key} = {show(other.location)}"
                    + _leads(other),
                )


def _leads(place: Place) -> str:
    """ " (at <where it leads>)", in full, for a location spelled otherwise; "" for a catalog
    name."""
    if place.is_name or place.resolved == place.location:
        return ""
    return f" (at {json.dumps(place.resolved)})"


def _long(setting: _Setting) -> int:
    assert isinstance(setting.value, int)
    return setting.value


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    # Unquoted dotted keys (delete.retention.ms = 1) are nested tables in TOML; Kafka's names
    # read the same either way, so they are joined back.
    for key, value in table.items():
        if isinstance(value, dict) and value:
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _normal(key: str) -> str:
    """``key`` with case and separators folded, to recognise another section's key."""
    return re.sub(r"[._ -]", "_", key.lower())
