"""The settings of a Spark session segcompact starts for a config."""

from __future__ import annotations

from pathlib import Path

import pytest

from segcompact.config import load_config
from segcompact.spark.class_archive import JAVA_OPTION_VARIABLES
from segcompact.spark.session import SHORT_LIVED_ANY_GC, SHORT_LIVED_JVM, config_settings
from tests.support.config import write_config

JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


def test_a_short_lived_session_compiles_with_c1_alone_and_the_continuous_job_keeps_c2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in JAVA_OPTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    config = load_config(write_config(tmp_path, [tmp_path / "in"]))
    assert config_settings(config)[JAVA_OPTIONS] == SHORT_LIVED_JVM
    assert SHORT_LIVED_JVM.split() == [
        "-XX:TieredStopAtLevel=1",
        "-XX:MetaspaceSize=256m",
        "-XX:ReservedCodeCacheSize=240m",
        "-XX:+UseParallelGC",
    ]
    assert JAVA_OPTIONS not in config_settings(config, long_running=True)


def test_the_configs_own_java_options_win_and_its_extra_ones_stay(tmp_path: Path) -> None:
    own = {JAVA_OPTIONS: "-Xss4m", "spark.driver.extraJavaOptions": "-Dhttp.proxyHost=proxy"}
    config = load_config(write_config(tmp_path, [tmp_path / "in"], spark=own))
    for long_running in (False, True):
        settings = config_settings(config, long_running=long_running)
        assert settings[JAVA_OPTIONS] == "-Xss4m"
        assert settings["spark.driver.extraJavaOptions"] == "-Dhttp.proxyHost=proxy"


@pytest.mark.parametrize(
    ("variable", "options"),
    [
        ("spark.driver.extraJavaOptions", "-Dx=1 -XX:+UseG1GC"),
        ("JAVA_TOOL_OPTIONS", "-XX:+UseZGC -Xss2m"),
        ("_JAVA_OPTIONS", "-XX:+UseShenandoahGC"),
        ("JDK_JAVA_OPTIONS", "-XX:+UseSerialGC"),
    ],
)
def test_a_collector_chosen_elsewhere_is_not_given_a_second_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, options: str
) -> None:
    # A JVM given two collectors refuses to start ("Multiple garbage collectors selected").
    for name in JAVA_OPTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    spark: dict[str, str] = {}
    if variable.startswith("spark."):
        spark[variable] = options
    else:
        monkeypatch.setenv(variable, options)
    config = load_config(write_config(tmp_path, [tmp_path / "in"], spark=spark))
    assert config_settings(config)[JAVA_OPTIONS] == SHORT_LIVED_ANY_GC
    assert "GC" not in SHORT_LIVED_ANY_GC


def test_other_java_options_keep_the_parallel_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in JAVA_OPTION_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseGCOverheadLimit -Xss2m")
    config = load_config(write_config(tmp_path, [tmp_path / "in"]))
    assert config_settings(config)[JAVA_OPTIONS] == SHORT_LIVED_JVM
