from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.config import (
    INT_MAX,
    LONG_MAX,
    MAX_MS,
    MIN_TRIGGER_MS,
    CompactionStrategy,
    CompactorConfig,
    SourceConfig,
    StateConfig,
    StreamConfig,
    TombstoneMode,
    TopicConfig,
    is_table_name,
    is_uri,
    load_config,
    parse_config,
    resolve_location,
)
from segcompact.errors import ConfigError, SegcompactError
from segcompact.format.attributes import Compression
from tests.support.config import located

REPO = Path(__file__).resolve().parents[2]
FILE = "conf/bad.toml"
SOURCE = {"source": {"paths": ["data/segments"]}}
# A file's required locations besides [source] paths, for tests that write a file.
LOCATIONS_TOML = '[state]\ntable = "st"\n[output]\npath = "out"\n[stream]\ncheckpoint = "chk"\n'


def config(**sections: Any) -> CompactorConfig:
    return parse_config(located({**SOURCE, **sections}), FILE)


def error(data: dict[str, Any], *, complete: bool = True) -> str:
    """The error of ``data``, its missing locations filled in unless not ``complete``."""
    with pytest.raises(ConfigError) as info:
        parse_config(located(data) if complete else data, FILE)
    return str(info.value)


# (id, the file's data, "[section] key" named, value as shown or None, what is allowed)
REJECTED: list[tuple[str, dict[str, Any], str, str | None, str]] = [
    # unknown sections and keys
    ("section", {**SOURCE, "sourc": {}}, "[sourc]", None, "did you mean [source]?"),
    ("section-lists", {**SOURCE, "x": {}}, "[x]", None, "source, state, output, stream"),
    ("scalar-section", {**SOURCE, "paths": ["a"]}, "paths", '["a"]', "unknown section"),
    ("not-a-table", {"source": "data"}, "source", '"data"', "expected a table [source]"),
    (
        "source-key",
        {"source": {"paths": ["a"], "rolled": True}},
        "[source] rolled",
        "true",
        "did you mean rolled_only?",
    ),
    ("state-key", {**SOURCE, "state": {"tabel": "t"}}, "[state] tabel", '"t"', "table?"),
    ("output-key", {**SOURCE, "output": {"pth": "o"}}, "[output] pth", '"o"', "path?"),
    (
        "stream-key",
        {**SOURCE, "stream": {"trigger": "1 second"}},
        "[stream] trigger",
        '"1 second"',
        "did you mean trigger_interval?",
    ),
    (
        "defaults-key",
        {**SOURCE, "defaults": {"compaction.stratgy": "offset"}},
        "[defaults] compaction.stratgy",
        '"offset"',
        "did you mean compaction.strategy? (valid keys: compaction.strategy, ",
    ),
    (
        "topic-key",
        {**SOURCE, "topics": {"orders": {"delete.retention": 1}}},
        '[topics."orders"] delete.retention',
        "1",
        "did you mean delete.retention.ms?",
    ),
    (
        "snake-case-kafka-key",
        {**SOURCE, "defaults": {"delete_retention_ms": 1}},
        "[defaults] delete_retention_ms",
        "1",
        "did you mean delete.retention.ms?",
    ),
    (
        "key-in-wrong-section",
        {**SOURCE, "defaults": {"materialize.check.interval.ms": 5}},
        "[defaults] materialize.check.interval.ms",
        "5",
        "belongs in [stream] as materialize_check_interval_ms",
    ),
    (
        "kafka-only-key",
        {**SOURCE, "topics": {"orders": {"cleanup.policy": "compact"}}},
        '[topics."orders"] cleanup.policy',
        '"compact"',
        "a Kafka topic setting segcompact does not use (valid keys: compaction.strategy",
    ),
    (
        "unquoted-dotted-topic",
        {**SOURCE, "topics": {"my": {"topic": {"compaction": {"strategy": "offset"}}}}},
        '[topics."my"] topic.compaction.strategy',
        '"offset"',
        '[topics."my.topic"] compaction.strategy',
    ),
    (
        "given-twice",
        {**SOURCE, "defaults": {"segment.bytes": 100, "segment": {"bytes": 200}}},
        "[defaults] segment.bytes",
        "200",
        "given twice (also = 100)",
    ),
    # [source]
    ("paths-missing", {}, "[source] paths", None, "missing; expected a non-empty list"),
    ("metrics-port-0", {**SOURCE, "metrics": {"port": 0}}, "[metrics] port", "0", "1 to 65535"),
    (
        "metrics-port-big",
        {**SOURCE, "metrics": {"port": 70_000}},
        "[metrics] port",
        "70000",
        "65535",
    ),
    ("metrics-host", {**SOURCE, "metrics": {"host": ""}}, "[metrics] host", '""', "non-empty"),
    ("metrics-key", {**SOURCE, "metrics": {"prot": 1}}, "[metrics] prot", "1", "port?"),
    ("metrics-spark", {**SOURCE, "metrics": {"spark": 1}}, "[metrics] spark", "1", "true or false"),
    ("paths-empty", {"source": {"paths": []}}, "[source] paths", "[]", "non-empty list"),
    ("paths-str", {"source": {"paths": "d"}}, "[source] paths", '"d"', "list of non-empty"),
    ("paths-int", {"source": {"paths": [1]}}, "[source] paths", "[1]", "non-empty strings"),
    ("paths-twice", {"source": {"paths": ["a", "a"]}}, "[source] paths", '["a", "a"]', "once"),
    (
        "rolled-only",
        {"source": {"paths": ["a"], "rolled_only": "yes"}},
        "[source] rolled_only",
        '"yes"',
        "expected true or false",
    ),
    # [state], [output], [stream]
    ("table-empty", {**SOURCE, "state": {"table": ""}}, "[state] table", '""', "non-empty"),
    ("table-int", {**SOURCE, "state": {"ledger_table": 5}}, "[state] ledger_table", "5", "string"),
    (
        "secret-file-uri",
        {**SOURCE, "state": {"ledger_secret_file": "s3a://b/secret"}},
        "[state] ledger_secret_file",
        '"s3a://b/secret"',
        "expected a local file path (not a URI)",
    ),
    (
        "secret-file-empty",
        {**SOURCE, "state": {"ledger_secret_file": ""}},
        "[state] ledger_secret_file",
        '""',
        "expected a local file path",
    ),
    ("output-bool", {**SOURCE, "output": {"path": False}}, "[output] path", "false", "string"),
    (
        "interval-no-unit",
        {**SOURCE, "stream": {"trigger_interval": "10"}},
        "[stream] trigger_interval",
        '"10"',
        'expected a Spark interval "<n> <unit>" such as "10 seconds", unit one of microseconds',
    ),
    (
        "interval-bad-unit",
        {**SOURCE, "stream": {"trigger_interval": "10 secs"}},
        "[stream] trigger_interval",
        '"10 secs"',
        "milliseconds, seconds, minutes, hours, days, weeks",
    ),
    (
        "interval-month",
        {**SOURCE, "stream": {"trigger_interval": "1 month"}},
        "[stream] trigger_interval",
        '"1 month"',
        "unit one of",
    ),
    (
        "interval-int",
        {**SOURCE, "stream": {"trigger_interval": 10}},
        "[stream] trigger_interval",
        "10",
        "Spark interval",
    ),
    (
        "max-segments",
        {**SOURCE, "stream": {"max_segments_per_batch": -1}},
        "[stream] max_segments_per_batch",
        "-1",
        f"expected an integer from 0 to {INT_MAX}",
    ),
    (
        "check-interval",
        {**SOURCE, "stream": {"materialize_check_interval_ms": "0"}},
        "[stream] materialize_check_interval_ms",
        '"0"',
        f"expected an integer from 1 to {MAX_MS} (100 years)",
    ),
    (
        "check-interval-long-max",
        {**SOURCE, "stream": {"materialize_check_interval_ms": LONG_MAX}},
        "[stream] materialize_check_interval_ms",
        str(LONG_MAX),
        f"expected an integer from 1 to {MAX_MS} (100 years)",
    ),
    (
        "lease-long-max",
        {**SOURCE, "stream": {"lease_timeout_ms": LONG_MAX}},
        "[stream] lease_timeout_ms",
        str(LONG_MAX),
        f"expected an integer from 3000 to {MAX_MS} (100 years)",
    ),
    (
        "file-retention-long-max",
        {**SOURCE, "state": {"deleted_file_retention_ms": LONG_MAX}},
        "[state] deleted_file_retention_ms",
        str(LONG_MAX),
        f"expected an integer from 0 to {MAX_MS} (100 years)",
    ),
    (
        "trigger-zero",
        {**SOURCE, "stream": {"trigger_interval": "0 seconds"}},
        "[stream] trigger_interval",
        '"0 seconds"',
        "expected an interval from 100 milliseconds to 100 years",
    ),
    (
        "trigger-microseconds",
        {**SOURCE, "stream": {"trigger_interval": "7 microseconds"}},
        "[stream] trigger_interval",
        '"7 microseconds"',
        "expected an interval from 100 milliseconds to 100 years",
    ),
    (
        "trigger-overflow",
        {**SOURCE, "stream": {"trigger_interval": "9223372036854775807 weeks"}},
        "[stream] trigger_interval",
        '"9223372036854775807 weeks"',
        "expected an interval from 100 milliseconds to 100 years",
    ),
    # topic-level values
    (
        "strategy",
        {**SOURCE, "topics": {"orders": {"compaction.strategy": "newest"}}},
        '[topics."orders"] compaction.strategy',
        '"newest"',
        "expected one of offset, timestamp, header",
    ),
    (
        "strategy-int",
        {**SOURCE, "defaults": {"compaction.strategy": 1}},
        "[defaults] compaction.strategy",
        "1",
        "expected one of offset, timestamp, header",
    ),
    (
        "tombstone-mode",
        {**SOURCE, "defaults": {"compaction.tombstone.mode": "tombstone"}},
        "[defaults] compaction.tombstone.mode",
        '"tombstone"',
        "expected one of null-value, header, attribute",
    ),
    (
        "tombstone-header",
        {**SOURCE, "defaults": {"compaction.tombstone.header": " "}},
        "[defaults] compaction.tombstone.header",
        '" "',
        "expected a non-empty string",
    ),
    (
        "strategy-header",
        {**SOURCE, "defaults": {"compaction.strategy.header": ["v"]}},
        "[defaults] compaction.strategy.header",
        '["v"]',
        "expected a non-empty string",
    ),
    (
        "retention-negative",
        {**SOURCE, "defaults": {"delete.retention.ms": -1}},
        "[defaults] delete.retention.ms",
        "-1",
        f"expected an integer from 0 to {MAX_MS} (100 years)",
    ),
    (
        "retention-text",
        {**SOURCE, "defaults": {"delete.retention.ms": "one day"}},
        "[defaults] delete.retention.ms",
        '"one day"',
        "expected an integer",
    ),
    (
        "retention-float",
        {**SOURCE, "defaults": {"delete.retention.ms": 1.5}},
        "[defaults] delete.retention.ms",
        "1.5",
        "expected an integer",
    ),
    (
        "retention-bool",
        {**SOURCE, "defaults": {"delete.retention.ms": True}},
        "[defaults] delete.retention.ms",
        "true",
        "expected an integer",
    ),
    (
        "retention-over-long",
        {**SOURCE, "defaults": {"delete.retention.ms": "9223372036854775808"}},
        "[defaults] delete.retention.ms",
        '"9223372036854775808"',
        f"expected an integer from 0 to {MAX_MS} (100 years)",
    ),
    (
        "retention-long-max",
        {**SOURCE, "defaults": {"delete.retention.ms": LONG_MAX}},
        "[defaults] delete.retention.ms",
        str(LONG_MAX),
        f"expected an integer from 0 to {MAX_MS} (100 years)",
    ),
    (
        "min-lag-long-max",
        {**SOURCE, "defaults": {"min.compaction.lag.ms": LONG_MAX}},
        "[defaults] min.compaction.lag.ms",
        str(LONG_MAX),
        f"expected an integer from 0 to {MAX_MS} (100 years)",
    ),
    (
        "retention-underscores",
        {**SOURCE, "defaults": {"delete.retention.ms": "86_400_000"}},
        "[defaults] delete.retention.ms",
        '"86_400_000"',
        "expected an integer",
    ),
    (
        "min-lag",
        {**SOURCE, "defaults": {"min.compaction.lag.ms": -5}},
        "[defaults] min.compaction.lag.ms",
        "-5",
        "from 0 to",
    ),
    (
        "max-lag",
        {**SOURCE, "defaults": {"max.compaction.lag.ms": 0}},
        "[defaults] max.compaction.lag.ms",
        "0",
        f"from 1 to {LONG_MAX}",
    ),
    (
        "ratio-high",
        {**SOURCE, "defaults": {"min.cleanable.dirty.ratio": 1.5}},
        "[defaults] min.cleanable.dirty.ratio",
        "1.5",
        "expected a number from 0.0 to 1.0",
    ),
    (
        "ratio-negative",
        {**SOURCE, "defaults": {"min.cleanable.dirty.ratio": "-0.1"}},
        "[defaults] min.cleanable.dirty.ratio",
        '"-0.1"',
        "from 0.0 to 1.0",
    ),
    (
        "ratio-nan",
        {**SOURCE, "defaults": {"min.cleanable.dirty.ratio": float("nan")}},
        "[defaults] min.cleanable.dirty.ratio",
        "nan",
        "from 0.0 to 1.0",
    ),
    (
        "ratio-text",
        {**SOURCE, "defaults": {"min.cleanable.dirty.ratio": "half"}},
        "[defaults] min.cleanable.dirty.ratio",
        '"half"',
        "from 0.0 to 1.0",
    ),
    (
        "segment-bytes-small",
        {**SOURCE, "defaults": {"segment.bytes": 13}},
        "[defaults] segment.bytes",
        "13",
        f"expected an integer from 14 to {INT_MAX}",
    ),
    (
        "segment-bytes-over-int",
        {**SOURCE, "defaults": {"segment.bytes": "2147483648"}},
        "[defaults] segment.bytes",
        '"2147483648"',
        f"from 14 to {INT_MAX}",
    ),
    (
        "index-interval",
        {**SOURCE, "defaults": {"index.interval.bytes": -1}},
        "[defaults] index.interval.bytes",
        "-1",
        f"from 0 to {INT_MAX}",
    ),
    (
        "compression",
        {**SOURCE, "topics": {"logs": {"compression.type": "brotli"}}},
        '[topics."logs"] compression.type',
        '"brotli"',
        "expected one of producer, uncompressed, gzip, snappy, lz4, zstd (or none = uncompressed)",
    ),
    (
        "sla-zero",
        {**SOURCE, "defaults": {"gdpr.deletion.sla.ms": 0}},
        "[defaults] gdpr.deletion.sla.ms",
        "0",
        f'expected an integer from 1 to {MAX_MS} (100 years), or "none"',
    ),
    (
        "sla-long-max",
        {**SOURCE, "defaults": {"gdpr.deletion.sla.ms": LONG_MAX}},
        "[defaults] gdpr.deletion.sla.ms",
        str(LONG_MAX),
        f'expected an integer from 1 to {MAX_MS} (100 years), or "none"',
    ),
    (
        "sla-text",
        {**SOURCE, "defaults": {"gdpr.deletion.sla.ms": "never"}},
        "[defaults] gdpr.deletion.sla.ms",
        '"never"',
        'or "none"',
    ),
    # inconsistent values
    (
        "header-strategy-defaults",
        {**SOURCE, "defaults": {"compaction.strategy": "header"}},
        "[defaults] compaction.strategy",
        '"header"',
        "needs compaction.strategy.header (the header holding the version) in [defaults]",
    ),
    (
        "header-strategy-topic",
        {**SOURCE, "topics": {"orders": {"compaction.strategy": "header"}}},
        '[topics."orders"] compaction.strategy',
        '"header"',
        'needs compaction.strategy.header (the header holding the version) in [topics."orders"] '
        "or [defaults]",
    ),
    (
        "max-below-min-same-section",
        {**SOURCE, "defaults": {"min.compaction.lag.ms": 1000, "max.compaction.lag.ms": 999}},
        "[defaults] max.compaction.lag.ms",
        "999",
        "expected >= min.compaction.lag.ms = 1000 (from [defaults])",
    ),
    (
        "max-below-min-topic-max",
        {
            **SOURCE,
            "defaults": {"min.compaction.lag.ms": "1000"},
            "topics": {"orders": {"max.compaction.lag.ms": 100}},
        },
        '[topics."orders"] max.compaction.lag.ms',
        "100",
        'expected >= min.compaction.lag.ms = "1000" (from [defaults])',
    ),
    (
        "max-below-min-topic-min",
        {
            **SOURCE,
            "defaults": {"max.compaction.lag.ms": 100},
            "topics": {"orders": {"min.compaction.lag.ms": 1000}},
        },
        '[topics."orders"] min.compaction.lag.ms',
        "1000",
        "expected <= max.compaction.lag.ms = 100 (from [defaults])",
    ),
    (
        "sla-below-min-lag",
        {
            **SOURCE,
            "defaults": {"min.compaction.lag.ms": 3_600_000},
            "topics": {"users": {"gdpr.deletion.sla.ms": 60_000}},
        },
        '[topics."users"] gdpr.deletion.sla.ms',
        "60000",
        "expected >= min.compaction.lag.ms = 3600000 (from [defaults]): records younger than",
    ),
    # topic names
    *[
        (
            f"topic-name-{i}",
            {**SOURCE, "topics": {name: {}}},
            f"[topics.{shown}",
            None,
            f"({len(name)} characters): expected 1 to 249 characters from a-z A-Z 0-9 . _ -",
        )
        for i, (name, shown) in enumerate(
            [
                ("bad name", '"bad name"'),
                ("", '""'),
                ("..", '".."'),
                ("caf\u00e9", '"caf\\u00e9"'),
                ("a/b", '"a/b"'),
                ("orders\n", '"orders\\n"'),  # `$` would match before the newline
                ("t" * 250, '"' + "t" * 116),
            ]
        )
    ],
    (
        "topic-not-table",
        {**SOURCE, "topics": {"orders": 5}},
        '[topics."orders"]',
        "5",
        "expected a table of topic settings",
    ),
    ("topics-not-table", {**SOURCE, "topics": 5}, "topics", "5", "expected a table [topics]"),
    # locations that collide
    (
        "output-in-source",
        {**SOURCE, "output": {"path": "data/segments/out"}},
        "[output] path",
        '"data/segments/out"',
        'neither is, contains nor lies inside [source] paths = "data/segments"',
    ),
    (
        "same-table-twice",
        {**SOURCE, "state": {"pending_table": "data/state/"}},
        "[state] pending_table",
        '"data/state/"',
        'lies inside [state] table = "data/state"',
    ),
    (
        "checkpoint-in-table",
        {**SOURCE, "state": {"table": "checkpoints"}},
        "[stream] checkpoint",
        '"checkpoints/segcompact"',
        'lies inside [state] table = "checkpoints"',
    ),
    (
        "source-in-table",
        {"source": {"paths": ["s3a://b/state/in"]}, "state": {"table": "s3a://b/state"}},
        "[state] table",
        '"s3a://b/state"',
        'lies inside [source] paths = "s3a://b/state/in"',
    ),
    (
        "output-nul",
        {**SOURCE, "output": {"path": "o\0ut"}},
        "[output] path",
        '"o\\u0000ut"',
        "expected a location without NUL characters",
    ),
    (
        "source-nul",
        {"source": {"paths": ["i\0n"]}},
        "[source] paths",
        '["i\\u0000n"]',
        "expected locations without NUL characters",
    ),
    (
        "catalog-name-twice",
        {**SOURCE, "state": {"table": "main.sc.state", "ledger_table": "main.sc.STATE"}},
        "[state] ledger_table",
        '"main.sc.STATE"',
        'expected a table of its own, not also [state] table = "main.sc.state"',
    ),
]


@pytest.mark.parametrize(
    ("data", "head", "value", "allowed"),
    [pytest.param(*case[1:], id=case[0]) for case in REJECTED],
)
def test_rejected_with_one_line_naming_file_key_value_and_allowed(
    data: dict[str, Any], head: str, value: str | None, allowed: str
) -> None:
    message = error(data)
    assert message.startswith(f"{FILE}: {head}")
    if value is not None:
        assert f"{head} = {value}" in message
    assert allowed in message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize(
    ("section", "key"), [("state", "table"), ("output", "path"), ("stream", "checkpoint")]
)
def test_every_location_a_job_writes_must_be_named(section: str, key: str) -> None:
    """No default folder in the working directory that two jobs could share by accident."""
    data = located(SOURCE)
    data[section] = {k: v for k, v in data[section].items() if k != key}  # type: ignore[attr-defined]
    assert error(data, complete=False) == (
        f"{FILE}: [{section}] {key}: missing; expected a non-empty string"
    )


def test_config_error_is_a_segcompact_error() -> None:
    assert issubclass(ConfigError, SegcompactError)


# --- files ----------------------------------------------------------------------------------


def test_default_conf_file_loads_as_designed() -> None:
    cfg = load_config(REPO / "conf" / "compactor.toml")
    assert cfg.source == SourceConfig(paths=("data/segments",), rolled_only=True)
    # The demo's: its `purge --force` completes an erasure at once.
    assert cfg.state == StateConfig(
        table="data/state", deleted_file_retention_ms=0, ledger_secret_file="data/ledger.secret"
    )
    assert cfg.output.path == "data/compacted"
    assert cfg.stream == StreamConfig(checkpoint="checkpoints/segcompact")
    assert cfg.stream.trigger_interval == "10 seconds"
    assert cfg.defaults == TopicConfig()
    assert list(cfg.topics) == ["orders", "inventory", "sessions"]  # the demo's topics
    assert cfg.topic("inventory").strategy_header == "v"
    assert cfg.topic("sessions").tombstone_mode is TombstoneMode.HEADER
    assert cfg.topic("orders").compaction_strategy is CompactionStrategy.TIMESTAMP
    assert cfg.topic("orders").delete_retention_ms == 86_400_000
    assert cfg.topic("payments") == TopicConfig()


def test_missing_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read config file: No such file"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path)


def test_toml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('[source]\npaths = ["a"]\nrolled_only = \n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: invalid TOML: ")
    assert "line 3" in message
    assert len(message.splitlines()) == 1


def test_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[source]\npaths = ["caf\xe9"]\n')
    with pytest.raises(ConfigError, match=r"latin1\.toml: invalid TOML"):
        load_config(path)


def test_load_reads_a_file_and_names_it_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[source]\npaths = ["in"]\n'
        + LOCATIONS_TOML
        + '[defaults]\n"compaction.strategy" = "timestamp"\n'
        '[topics."orders"]\n"compaction.strategy" = "newest"\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f'{path}: [topics."orders"] compaction.strategy = "newest": '
        "expected one of offset, timestamp, header"
    )


def test_unquoted_dotted_kafka_keys_read_as_quoted(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[source]\npaths = ["in"]\n' + LOCATIONS_TOML + "[defaults]\ndelete.retention.ms = 5\n"
    )
    assert load_config(path).defaults.delete_retention_ms == 5


def test_spark_section_passes_settings_as_strings(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[source]\npaths = ["in"]\n' + LOCATIONS_TOML + "[spark]\n"
        '"spark.hadoop.fs.s3a.endpoint" = "http://127.0.0.1:9000"\n'
        "spark.hadoop.fs.s3a.path.style.access = true\n"  # unquoted: nested tables in TOML
        '"spark.sql.shuffle.partitions" = 8\n'
    )
    config = load_config(path)
    assert config.spark == {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.sql.shuffle.partitions": "8",
    }
    # The Python side opens the job's locations with the spark.hadoop.* ones.
    assert config.storage.hadoop == {
        "fs.s3a.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.path.style.access": "true",
    }
    path.write_text(
        '[source]\npaths = ["in"]\n' + LOCATIONS_TOML + '[spark]\n"fs.s3a.endpoint" = "x"\n'
    )
    with pytest.raises(ConfigError, match=r'\[spark\] fs.s3a.endpoint = "x": expected a Spark'):
        load_config(path)
    path.write_text('[source]\npaths = ["in"]\n' + LOCATIONS_TOML + '[spark]\n"spark.jars" = [1]\n')
    with pytest.raises(ConfigError, match="expected a string, number or boolean"):
        load_config(path)


# --- resolution -----------------------------------------------------------------------------


def test_precedence_kafka_default_then_defaults_then_topic() -> None:
    cfg = config(
        defaults={"delete.retention.ms": 1000, "segment.bytes": 2048, "compression.type": "lz4"},
        topics={"orders": {"segment.bytes": 4096}, "users": {}},
    )
    orders, users, other = cfg.topic("orders"), cfg.topic("users"), cfg.topic("other")
    assert orders.segment_bytes == 4096  # topic
    assert orders.delete_retention_ms == 1000  # [defaults]
    assert orders.compression_type is Compression.LZ4
    assert orders.min_cleanable_dirty_ratio == 0.5  # Kafka's default
    assert users == other == cfg.defaults
    assert other.segment_bytes == 2048
    assert list(cfg.topics) == ["orders", "users"]  # file order


def test_topic_lookup_is_precomputed() -> None:
    cfg = config(topics={"orders": {"segment.bytes": 4096}})
    assert cfg.topic("orders") is cfg.topic("orders")
    assert cfg.topic("anything") is cfg.defaults


def test_kafka_defaults() -> None:
    t = config().defaults
    assert t.compaction_strategy is CompactionStrategy.OFFSET
    assert t.strategy_header is None
    assert t.tombstone_mode is TombstoneMode.NULL_VALUE
    assert t.tombstone_header == "tombstone"
    assert t.delete_retention_ms == 86_400_000
    assert t.min_compaction_lag_ms == 0
    assert t.max_compaction_lag_ms == 2**63 - 1
    assert t.min_cleanable_dirty_ratio == 0.5
    assert t.segment_bytes == 1_073_741_824
    assert t.index_interval_bytes == 4096
    assert t.compression_type is None  # "producer": keep the input's codec
    assert t.gdpr_deletion_sla_ms is None


def test_header_strategy_takes_its_header_from_topic_or_defaults() -> None:
    cfg = config(
        defaults={"compaction.strategy.header": "version"},
        topics={
            "a": {"compaction.strategy": "header"},
            "b": {"compaction.strategy": "header", "compaction.strategy.header": "v2"},
        },
    )
    assert cfg.topic("a").compaction_strategy is CompactionStrategy.HEADER
    assert cfg.topic("a").strategy_header == "version"
    assert cfg.topic("b").strategy_header == "v2"


def test_strings_numbers_booleans_and_case() -> None:
    cfg = config(
        source={"paths": ["a", "b"], "rolled_only": "False"},
        stream={"max_segments_per_batch": "8", "materialize_check_interval_ms": "500"},
        defaults={
            "delete.retention.ms": " 86400000 ",
            "min.cleanable.dirty.ratio": "0.25",
            "compaction.strategy": "Timestamp",
            "compaction.tombstone.mode": "HEADER",
            "compression.type": "none",
            "gdpr.deletion.sla.ms": "+2592000000",
        },
        topics={"metrics": {"gdpr.deletion.sla.ms": "none", "min.cleanable.dirty.ratio": 1}},
    )
    assert cfg.source == SourceConfig(paths=("a", "b"), rolled_only=False)
    assert cfg.stream.max_segments_per_batch == 8
    assert cfg.stream.materialize_check_interval_ms == 500
    d = cfg.defaults
    assert d.delete_retention_ms == 86_400_000
    assert d.min_cleanable_dirty_ratio == 0.25
    assert d.compaction_strategy is CompactionStrategy.TIMESTAMP
    assert d.tombstone_mode is TombstoneMode.HEADER
    assert d.compression_type is Compression.NONE
    assert d.gdpr_deletion_sla_ms == 2_592_000_000
    assert cfg.topic("metrics").gdpr_deletion_sla_ms is None  # "none" turns the SLA off
    assert cfg.topic("metrics").min_cleanable_dirty_ratio == 1.0


INTEGER_KEYS = [
    ("delete.retention.ms", "delete_retention_ms", 0, MAX_MS),
    ("min.compaction.lag.ms", "min_compaction_lag_ms", 0, MAX_MS),
    ("max.compaction.lag.ms", "max_compaction_lag_ms", 1, LONG_MAX),
    ("segment.bytes", "segment_bytes", 14, INT_MAX),
    ("index.interval.bytes", "index_interval_bytes", 0, INT_MAX),
    ("gdpr.deletion.sla.ms", "gdpr_deletion_sla_ms", 1, MAX_MS),
]


@given(st.sampled_from(INTEGER_KEYS), st.data())
def test_integer_as_int_or_string_parses_the_same(
    spec: tuple[str, str, int, int], data: st.DataObject
) -> None:
    key, attr, lo, hi = spec
    sections: dict[str, dict[str, object]] = {}
    if key == "gdpr.deletion.sla.ms":  # an SLA must leave the upkeep a quarter of it to run
        lo = 4 * MIN_TRIGGER_MS
        sections = {
            "stream": {"materialize_check_interval_ms": 1, "trigger_interval": "100 milliseconds"},
            "state": {"deleted_file_retention_ms": 0},
        }
    n = data.draw(st.integers(lo, hi))
    as_int = getattr(config(defaults={key: n}, **sections).defaults, attr)
    as_str = getattr(config(defaults={key: str(n)}, **sections).defaults, attr)
    assert as_int == as_str == n


@given(st.sampled_from(INTEGER_KEYS), st.data())
def test_integer_out_of_range_is_rejected(
    spec: tuple[str, str, int, int], data: st.DataObject
) -> None:
    key, _, lo, hi = spec
    n = data.draw(st.one_of(st.integers(max_value=lo - 1), st.integers(min_value=hi + 1)))
    for value in (n, str(n)):
        with pytest.raises(ConfigError, match=f"from {lo} to {hi}"):
            config(defaults={key: value})


@pytest.mark.parametrize(
    "text",
    [
        "10 seconds",
        "1 second",
        "500 milliseconds",
        "2 minutes",
        "1 minute 30 seconds",
        "interval 1 hour",
        "INTERVAL 2 Hours",
        "100 milliseconds",
        "100000 microseconds",
        "1 day",
        " 3 weeks ",
        "5214 weeks",
    ],
)
def test_trigger_interval_is_checked_then_kept_for_spark(text: str) -> None:
    stream = config(stream={"trigger_interval": text}).stream
    assert stream.trigger_interval == text.strip()  # Spark parses it; the config only checks


@pytest.mark.parametrize(
    ("text", "codec"),
    [
        ("producer", None),
        ("uncompressed", Compression.NONE),
        ("none", Compression.NONE),
        ("gzip", Compression.GZIP),
        ("Snappy", Compression.SNAPPY),
        (" lz4 ", Compression.LZ4),
        ("ZSTD", Compression.ZSTD),
    ],
)
def test_compression_type_is_the_codec_the_writer_uses(
    text: str, codec: Compression | None
) -> None:
    topic = config(topics={"t": {"compression.type": text}}).topic("t")
    assert topic.compression_type is codec


# --- locations ------------------------------------------------------------------------------


def test_paths_are_kept_as_written() -> None:
    cfg = config(
        state={"table": "main.segcompact.state", "partitions_table": "s3a://b/partitions"},
        output={"path": "/abs/out"},
    )
    assert cfg.state.table == "main.segcompact.state"
    assert cfg.state.partitions_table == "s3a://b/partitions"
    # Tables left unnamed sit beside the state table, whatever it is.
    assert cfg.state.pending_table == "main.segcompact.state_pending_txn"
    assert cfg.state.ledger_table == "main.segcompact.state_deletion_ledger"
    assert cfg.output.path == "/abs/out"
    assert cfg.source.paths == ("data/segments",)


def test_with_base_dir_pins_only_relative_local_paths(tmp_path: Path) -> None:
    cfg = config(
        state={"table": "main.segcompact.state", "partitions_table": "dbfs:/p"},
        output={"path": "/abs/out"},
    ).with_base_dir(tmp_path)
    assert cfg.source.paths == (str(tmp_path / "data/segments"),)
    assert cfg.state.table == "main.segcompact.state"
    assert cfg.state.partitions_table == "dbfs:/p"
    assert cfg.state.pending_table == "main.segcompact.state_pending_txn"
    assert cfg.output.path == "/abs/out"
    assert cfg.stream.checkpoint == str(tmp_path / "checkpoints/segcompact")
    assert cfg.state.ledger_secret_file is None
    secret = config(state={"ledger_secret_file": "data/ledger.secret"}).with_base_dir(tmp_path)
    assert secret.state.ledger_secret_file == str(tmp_path / "data/ledger.secret")
    pinned = config(state={"ledger_secret_file": "/etc/segcompact/secret"}).with_base_dir(tmp_path)
    assert pinned.state.ledger_secret_file == "/etc/segcompact/secret"


@pytest.mark.parametrize(
    ("location", "uri", "name"),
    [
        ("s3a://bucket/x", True, False),
        ("abfss://c@a.dfs.core.windows.net/x", True, False),
        ("dbfs:/x", True, False),
        ("main.segcompact.state", False, True),
        ("db.state", False, True),
        ("main.`my-schema`.state", False, True),
        ("data/state", False, False),
        ("./state.delta", False, False),
        ("state", False, False),
        ("/abs/state", False, False),
    ],
)
def test_location_kinds(location: str, uri: bool, name: bool) -> None:
    assert is_uri(location) is uri
    assert is_table_name(location) is name


def test_resolve_location() -> None:
    assert resolve_location("data/x", "/base") == "/base/data/x"
    assert resolve_location("db.t", "/base") == "/base/db.t"
    assert resolve_location("db.t", "/base", table=True) == "db.t"
    assert resolve_location("hdfs://nn/x", "/base") == "hdfs://nn/x"


# --- values ---------------------------------------------------------------------------------


def test_enum_from_str_lists_valid_values() -> None:
    assert CompactionStrategy.from_str("header") is CompactionStrategy.HEADER
    assert TombstoneMode.from_str("null-value") is TombstoneMode.NULL_VALUE
    with pytest.raises(ValueError, match="expected one of offset, timestamp, header"):
        CompactionStrategy.from_str("newest")
    with pytest.raises(ValueError, match="expected one of null-value, header, attribute"):
        TombstoneMode.from_str("null")


def test_topic_config_checks_cross_field_rules() -> None:
    with pytest.raises(ConfigError, match=r"compaction\.strategy\.header"):
        TopicConfig(compaction_strategy=CompactionStrategy.HEADER)
    with pytest.raises(ConfigError, match=r"max\.compaction\.lag\.ms"):
        TopicConfig(min_compaction_lag_ms=10, max_compaction_lag_ms=5)


def test_config_pickles_for_spark_closures() -> None:
    cfg = load_config(REPO / "conf" / "compactor.toml")
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def test_importing_config_does_not_import_pyspark() -> None:
    code = (
        "import sys, segcompact.config; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
