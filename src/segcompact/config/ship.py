"""The shipper's config file: ``[ship]``, and the ``[metrics]`` and ``[spark]`` sections the
job's file has (``[spark]``'s ``spark.hadoop.*`` keys say how to reach the target's store, as
they do for the job; nothing starts Spark).

Every mistake is one :class:`~segcompact.errors.ConfigError` line naming the file, section,
key and what is allowed, as in the job's file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from segcompact.config import values as v
from segcompact.config.keys import SECTIONS as JOB_SECTIONS
from segcompact.config.keys import Key, _keys
from segcompact.config.locations import Place, overlap
from segcompact.config.messages import show
from segcompact.config.model import MetricsConfig
from segcompact.config.parser import _Parser, read_toml
from segcompact.errors import ConfigError
from segcompact.format.logdir import MAX_TOPIC_LENGTH, TOPIC_CHARACTERS, is_topic_name


@dataclass(frozen=True, slots=True)
class ShipSettings:
    """``[ship]``: copy the rolled segments of ``topics`` (names) and of the topics
    ``topics_regex`` matches whole, from the broker's ``log_dirs`` to the source root ``to``."""

    log_dirs: tuple[str, ...]
    to: str
    topics: tuple[str, ...] = ()
    topics_regex: str | None = None
    poll_interval_ms: int = 10_000
    uploads: int = 4  # segments uploaded at once, each of another partition
    lease_timeout_ms: int = 60_000


@dataclass(frozen=True, slots=True)
class ShipConfig:
    """A whole shipper config file."""

    ship: ShipSettings
    metrics: MetricsConfig
    spark: Mapping[str, str]


def _names(value: object) -> tuple[str, ...]:
    names = v.paths(value)
    for name in names:
        if not is_topic_name(name):
            raise v.Invalid(
                f"invalid topic name {show(name)}: expected 1 to {MAX_TOPIC_LENGTH} characters "
                f"from {TOPIC_CHARACTERS} (and not . or ..)"
            )
    return names


def _regex(value: object) -> str:
    text = v.text(value)
    try:
        re.compile(text)
    except re.error as e:
        raise v.Invalid(f"expected a regular expression ({e})") from None
    return text


SHIP_KEYS = _keys(
    Key("log_dirs", "log_dirs", v.paths, required=True),
    Key("to", "to", v.location, required=True),
    Key("topics", "topics", _names),
    Key("topics_regex", "topics_regex", _regex),
    Key("poll_interval_ms", "poll_interval_ms", v.millis(100)),
    Key("uploads", "uploads", v.integer(1, 64)),
    Key("lease_timeout_ms", "lease_timeout_ms", v.millis(3_000)),
)
_SECTIONS = ("ship", "metrics", "spark")


def load_ship_config(path: str | os.PathLike[str]) -> ShipConfig:
    """Read and check a shipper config file; :class:`ConfigError` on any problem."""
    name = os.fspath(path)
    return parse_ship_config(read_toml(name), name)


def parse_ship_config(data: Mapping[str, Any], source: str) -> ShipConfig:
    parser = _Parser(source)
    for section, value in data.items():
        if section not in _SECTIONS or not isinstance(value, dict):
            raise ConfigError(
                f"{source}: [{section}]: not a section of a shipper config "
                f"(sections: {', '.join(f'[{s}]' for s in _SECTIONS)})"
            )
    if "ship" not in data:
        raise ConfigError(f"{source}: [ship]: missing; it names log_dirs and to")
    found = parser.section("[ship]", data["ship"], SHIP_KEYS)
    ship = ShipSettings(**{SHIP_KEYS[k].attr: s.value for k, s in found.items()})
    if not ship.topics and ship.topics_regex is None:
        raise ConfigError(
            f'{source}: [ship]: names no topic; set topics = [...] or topics_regex = "..."'
        )
    target = Place("[ship]", "to", ship.to, True)
    for log_dir in ship.log_dirs:
        if overlap(Place("[ship]", "log_dirs", log_dir, True), target):
            raise ConfigError(
                f"{source}: [ship] to = {show(ship.to)}: expected a location that neither is, "
                f"contains nor lies inside [ship] log_dirs = {show(log_dir)}"
            )
    metrics_keys = JOB_SECTIONS["metrics"]
    metrics = parser.section("[metrics]", data.get("metrics", {}), metrics_keys)
    return ShipConfig(
        ship=ship,
        metrics=MetricsConfig(**{metrics_keys[k].attr: s.value for k, s in metrics.items()}),
        spark=parser.spark(data.get("spark", {})),
    )


__all__ = ["ShipConfig", "ShipSettings", "load_ship_config", "parse_ship_config"]
