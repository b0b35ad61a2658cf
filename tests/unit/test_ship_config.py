"""The shipper's config file: what it holds, and one line naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from segcompact.config.ship import load_ship_config, parse_ship_config
from segcompact.errors import ConfigError


def test_a_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "ship.toml"
    path.write_text(
        "[ship]\n"
        'log_dirs = ["/var/lib/kafka/data"]\n'
        'to = "s3a://lake/segments"\n'
        'topics = ["orders"]\n'
        'topics_regex = "audit\\\\..*"\n'
        "poll_interval_ms = 5000\n"
        "[metrics]\nport = 9404\n"
        '[spark]\n"spark.hadoop.fs.s3a.endpoint" = "http://minio:9000"\n'
    )
    config = load_ship_config(path)
    assert config.ship.log_dirs == ("/var/lib/kafka/data",)
    assert config.ship.to == "s3a://lake/segments"
    assert config.ship.topics == ("orders",)
    assert config.ship.topics_regex == r"audit\..*"
    assert config.ship.poll_interval_ms == 5000
    assert config.ship.uploads == 4
    assert config.metrics.port == 9404
    assert config.spark == {"spark.hadoop.fs.s3a.endpoint": "http://minio:9000"}


_OK = {"log_dirs": ["/data"], "to": "/lake", "topics": ["orders"]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, r"\[ship\]: missing"),
        ({"ship": {"to": "/lake", "topics": ["a"]}}, r"\[ship\] log_dirs: missing"),
        (
            {"ship": {**_OK, "log_dirs": "/data"}},
            r"log_dirs = \"/data\": expected a non-empty list",
        ),
        ({"ship": {**_OK, "topics": ["a b"]}}, r"topics = .*invalid topic name \"a b\""),
        ({"ship": {**_OK, "topics_regex": "("}}, r"topics_regex = \"\(\": expected a regular"),
        ({"ship": {"log_dirs": ["/data"], "to": "/lake"}}, r"names no topic"),
        ({"ship": {**_OK, "poll_interval_ms": 5}}, r"poll_interval_ms = 5: expected an integer"),
        ({"ship": {**_OK, "uploads": 0}}, r"uploads = 0: expected an integer from 1 to 64"),
        ({"ship": {**_OK, "log_dir": ["/x"]}}, r"log_dir = .*unknown key; did you mean"),
        ({"ship": {**_OK, "to": "/data/lake"}}, r"to = \"/data/lake\": expected a location"),
        ({"ship": _OK, "source": {"paths": ["/x"]}}, r"\[source\]: not a section of a shipper"),
        ({"ship": _OK, "metrics": {"port": 0}}, r"\[metrics\] port = 0: expected an integer"),
    ],
)
def test_a_mistake_is_one_line_naming_it(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        parse_ship_config(data, "ship.toml")
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("ship.toml: ")
