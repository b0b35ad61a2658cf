"""Every millisecond setting has a range that fits the arithmetic done with it, and a config
file no reader can handle (nested too deeply) is a one-line error."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.config import LONG_MAX, MAX_MS, MIN_TRIGGER_MS, load_config
from segcompact.config.keys import SECTIONS, TOPIC_KEYS, Key
from segcompact.config.values import Invalid, interval
from segcompact.erasure.schedule import erasure_due
from segcompact.errors import ConfigError
from segcompact.humanize import iso_time

# Every key holding milliseconds, and the key the job only compares (Kafka's Long.MAX_VALUE,
# its default, means "never"), by name as written.
MS_KEYS = {
    f"[{section}] {name}": key
    for section, keys in {**SECTIONS, "defaults": TOPIC_KEYS}.items()
    for name, key in keys.items()
    if name.endswith(("_ms", ".ms"))
}
ONLY_COMPARED = {"[defaults] max.compaction.lag.ms"}

# A clock the job may run with: any time from the epoch to the year 3000 (SEGCOMPACT_CLOCK
# can set any).
NOW = st.integers(0, int(datetime(3000, 1, 1, tzinfo=UTC).timestamp() * 1000))
_DATETIME_MAX_MS = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() * 1000)


def _largest(key: Key) -> int:
    """The largest value ``key`` accepts, found by asking its parser."""
    largest = key.parse(MAX_MS)
    with pytest.raises(Invalid, match=f"to {MAX_MS} \\(100 years\\)"):
        key.parse(MAX_MS + 1)
    assert isinstance(largest, int)
    return largest


def test_every_ms_key_is_known_to_these_tests() -> None:
    assert set(MS_KEYS) == {
        "[state] deleted_file_retention_ms",
        "[stream] materialize_check_interval_ms",
        "[stream] lease_timeout_ms",
        "[defaults] delete.retention.ms",
        "[defaults] min.compaction.lag.ms",
        "[defaults] max.compaction.lag.ms",
        "[defaults] gdpr.deletion.sla.ms",
    }


@pytest.mark.parametrize("name", sorted(set(MS_KEYS) - ONLY_COMPARED))
def test_every_added_ms_key_stops_at_100_years(name: str) -> None:
    assert _largest(MS_KEYS[name]) == MAX_MS


def test_max_compaction_lag_keeps_kafkas_never() -> None:
    assert MS_KEYS["[defaults] max.compaction.lag.ms"].parse(LONG_MAX) == LONG_MAX


def _fits(ms: int) -> None:
    """``ms`` is a Delta timestamp (microseconds in a signed long) and a Python datetime."""
    assert -(2**63) <= ms * 1000 <= LONG_MAX
    assert iso_time(ms)  # year 1 to 9999, or OverflowError
    datetime.fromtimestamp(ms / 1000, UTC)


@given(now=NOW, name=st.sampled_from(sorted(set(MS_KEYS) - ONLY_COMPARED)))
def test_the_largest_value_added_as_the_job_adds_it_fits(now: int, name: str) -> None:
    largest = _largest(MS_KEYS[name])
    # now + it: a delete horizon (delete.retention.ms), a lease's expiry, the next upkeep, a
    # VACUUM's cutoff; appended + it: a deadline (appended is at most now).
    _fits(now + largest)
    # now - it: the youngest record old enough to compact (min.compaction.lag.ms), the files a
    # VACUUM may remove (deleted_file_retention_ms).
    _fits(now - largest)
    # deadline + its quarter: when erasure falls due, looked ahead by a quarter.
    _fits(now + largest + largest // 4)
    assert erasure_due(now, largest, now + largest) in (True, False)
    # The lease renews every third of its timeout: a wait Python's threads can do.
    assert largest / 3000 <= threading.TIMEOUT_MAX


def test_trigger_interval_range() -> None:
    assert interval(f"{MIN_TRIGGER_MS} milliseconds") == "100 milliseconds"
    assert interval("5214 weeks")  # within 100 years
    for short in ("0 seconds", "99 milliseconds", "99999 microseconds"):
        with pytest.raises(Invalid, match="from 100 milliseconds to 100 years"):
            interval(short)
    for long in ("5215 weeks", "9223372036854775807 seconds"):
        with pytest.raises(Invalid, match="from 100 milliseconds to 100 years"):
            interval(long)


# --- files nested too deeply ----------------------------------------------------------------

_LOCATIONS = '[source]\npaths = ["in"]\n[state]\ntable = "st"\n[output]\npath = "out"\n'
_LOCATIONS += '[stream]\ncheckpoint = "chk"\n'
_DEEP = 100_000


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x = " + "[\n" * _DEEP + "]\n" * _DEEP, "nested too deeply"),  # over many lines
        ("x = " + "[" * _DEEP + "]" * _DEEP, "line 1 is 200004 bytes long, expected at most"),
        ("a" + ".a" * _DEEP + " = 1", "line 1 is 200005 bytes long, expected at most 10000"),
        ("[" + ".".join(["t"] * _DEEP) + "]", "bytes long"),
        (_LOCATIONS + "[spark]\n" + "a" + ".a" * 3000 + " = 1\n", "nested too deeply"),
        (_LOCATIONS + "[defaults]\n" + "a" + ".a" * 3000 + " = 1\n", "nested too deeply"),
    ],
    ids=["arrays", "arrays-one-line", "dotted-key", "table-name", "spark-key", "defaults-key"],
)
def test_a_file_nested_too_deeply_is_one_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert len(message.splitlines()) == 1
