"""The compactor's configuration: read ``conf/compactor.toml``, check it, resolve topic settings.

Pure: stdlib ``tomllib`` and dataclasses only, so the CLI can reject a bad file before it starts
a JVM. The package, by job:

- :mod:`~segcompact.config.model`: the public model (enums and frozen dataclasses).
- :mod:`~segcompact.config.locations`: paths, URIs and catalog names; when two collide (where
  they lead: the one place the config reads the disk besides the file, following symlinks).
- :mod:`~segcompact.config.values`: parsers of single values (integers, ratios, codecs, ...).
- :mod:`~segcompact.config.keys`: the sections and keys a file may use.
- :mod:`~segcompact.config.parser`: reading a file, resolving topics, blaming bad keys.
- :mod:`~segcompact.config.sla`: what a deletion SLA asks of the rest (retention, waits).
- :mod:`~segcompact.config.messages`: how errors spell the values they quote.
"""

from __future__ import annotations

from segcompact.config.locations import is_table_name, is_uri, resolve_location
from segcompact.config.model import (
    INT_MAX,
    LONG_MAX,
    MAX_MS,
    MIN_TRIGGER_MS,
    CompactionStrategy,
    CompactorConfig,
    MetricsConfig,
    OutputConfig,
    SourceConfig,
    StateConfig,
    StreamConfig,
    TombstoneMode,
    TopicConfig,
)
from segcompact.config.parser import load_config, parse_config

__all__ = [
    "INT_MAX",
    "LONG_MAX",
    "MAX_MS",
    "MIN_TRIGGER_MS",
    "CompactionStrategy",
    "CompactorConfig",
    "MetricsConfig",
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
