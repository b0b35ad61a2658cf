"""The settings of a Spark session segcompact starts for a config."""

from __future__ import annotations

from pathlib import Path

from segcompact.config import load_config
from segcompact.spark.session import SHORT_LIVED_JVM, config_settings
from tests.support.config import write_config

JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


def test_a_short_lived_session_compiles_with_c1_alone_and_the_continuous_job_keeps_c2(
    tmp_path: Path,
) -> None:
    config = load_config(write_config(tmp_path, [tmp_path / "in"]))
    assert config_settings(config)[JAVA_OPTIONS] == SHORT_LIVED_JVM
    assert SHORT_LIVED_JVM.split() == ["-XX:TieredStopAtLevel=1", "-XX:+UseParallelGC"]
    assert JAVA_OPTIONS not in config_settings(config, long_running=True)


def test_the_configs_own_java_options_win_and_its_extra_ones_stay(tmp_path: Path) -> None:
    own = {JAVA_OPTIONS: "-Xss4m", "spark.driver.extraJavaOptions": "-Dhttp.proxyHost=proxy"}
    config = load_config(write_config(tmp_path, [tmp_path / "in"], spark=own))
    for long_running in (False, True):
        settings = config_settings(config, long_running=long_running)
        assert settings[JAVA_OPTIONS] == "-Xss4m"
        assert settings["spark.driver.extraJavaOptions"] == "-Dhttp.proxyHost=proxy"
