"""Value parsers: each takes a value as TOML gives it and returns the typed value.

Numbers may be TOML numbers or strings (``"86400000"``), as in Kafka's property files; words
match in any case. A parser raises :class:`Invalid` saying what is allowed; the parser of the
file adds where the value was found.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeVar

from segcompact.config.locations import is_uri
from segcompact.config.model import MAX_MS, MIN_TRIGGER_MS, ChoiceEnum
from segcompact.format.attributes import Compression

E = TypeVar("E", bound=ChoiceEnum)


class Invalid(Exception):
    """A value is not allowed; ``args[0]`` says what is ("expected …")."""


class _Missing:
    pass


MISSING = _Missing()  # the value of a key the file leaves out; every parser rejects it

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_DECIMAL = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")


def integer(lo: int, hi: int, *, also: str = "") -> Callable[[object], int]:
    """A parser of integers from ``lo`` to ``hi``; ``also`` extends its message."""
    expected = f"expected an integer from {lo} to {hi}{also}"

    def parse(value: object) -> int:
        # Kafka's longs have at most 19 digits; the length cap also keeps int() cheap.
        if isinstance(value, str) and len(value) < 40 and _INTEGER.match(value.strip()):
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise Invalid(expected)
        return value

    return parse


def millis(lo: int) -> Callable[[object], int]:
    """A parser of durations in ms from ``lo`` to :data:`~segcompact.config.model.MAX_MS`."""
    return integer(lo, MAX_MS, also=" (100 years)")


def ratio(value: object) -> float:
    if isinstance(value, str) and _DECIMAL.match(value.strip()):
        value = float(value.strip())
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or not 0.0 <= value <= 1.0
    ):
        raise Invalid("expected a number from 0.0 to 1.0")
    return float(value)


def boolean(value: object) -> bool:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if not isinstance(value, bool):
        raise Invalid("expected true or false")
    return value


def text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("expected a non-empty string")
    return value


def location(value: object) -> str:
    """A path, URI or (for a Delta table) catalog name: a non-empty string without NUL, which
    no file system allows (and which would fail the comparison of locations at start)."""
    found = text(value)
    if "\0" in found:
        raise Invalid("expected a location without NUL characters")
    return found


def local_path(value: object) -> str:
    """A path on the machine segcompact runs on (a file it reads itself, not through Spark)."""
    if not isinstance(value, str) or not value.strip() or is_uri(value):
        raise Invalid("expected a local file path (not a URI)")
    return value


def choice(enum_type: type[E]) -> Callable[[object], E]:
    """A parser of ``enum_type``'s spellings."""

    def parse(value: object) -> E:
        try:
            if isinstance(value, str):
                return enum_type.from_str(value)
        except ValueError:
            pass
        raise Invalid(f"expected one of {enum_type.choices()}")

    return parse


# Kafka's topic-level names; "none" is accepted as the producer-side spelling of "uncompressed".
_COMPRESSION_TYPES: dict[str, Compression | None] = {
    "producer": None,
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}


def compression(value: object) -> Compression | None:
    """``compression.type``: the codec to write with; None for "producer" (keep the input's)."""
    name = value.strip().lower() if isinstance(value, str) else None
    if name == "none":
        name = "uncompressed"
    if name not in _COMPRESSION_TYPES:
        choices = ", ".join(_COMPRESSION_TYPES)
        raise Invalid(f"expected one of {choices} (or none = uncompressed)")
    return _COMPRESSION_TYPES[name]


_sla_ms = integer(1, MAX_MS, also=' (100 years), or "none"')


def sla(value: object) -> int | None:
    """``gdpr.deletion.sla.ms``: a duration in ms, or "none" (no SLA)."""
    if isinstance(value, str) and value.strip().lower() == "none":
        return None
    return _sla_ms(value)


def paths(value: object) -> tuple[str, ...]:
    expected = "expected a non-empty list of non-empty strings"
    if not isinstance(value, list) or not value:
        raise Invalid(expected)
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise Invalid(expected)
        if "\0" in item:
            raise Invalid("expected locations without NUL characters")
    if len(set(value)) != len(value):
        raise Invalid(expected + ", each listed once")
    return tuple(value)


# The units of a Spark processing-time interval; Spark's triggers refuse months and years.
_INTERVAL_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week")
_INTERVAL_UNIT = re.compile(r"[0-9]+\s+([A-Za-z]+)")
_INTERVAL = re.compile(
    r"^\s*(?:interval\s+)?[0-9]+\s+[A-Za-z]+(?:\s+[0-9]+\s+[A-Za-z]+)*\s*$", re.I
)


def interval(value: object) -> str:
    """A Spark processing-time interval ("10 seconds", "1 minute 30 seconds"), as written,
    from 100 milliseconds (:data:`~segcompact.config.model.MIN_TRIGGER_MS`) to 100 years.

    Spark reads it; this only checks it first, so a typo fails before a JVM starts. Fractions
    are left out as rarely wanted.
    """
    if not (
        isinstance(value, str)
        and len(value) < 200  # keeps the numbers' int() cheap
        and _INTERVAL.match(value)
        and all(
            unit.lower().removesuffix("s") in _INTERVAL_UNITS
            for unit in _INTERVAL_UNIT.findall(value)
        )
    ):
        units = ", ".join(f"{u}s" for u in _INTERVAL_UNITS)
        raise Invalid(
            f'expected a Spark interval "<n> <unit>" such as "10 seconds", unit one of {units}'
        )
    ms = interval_ms(value)
    if not MIN_TRIGGER_MS <= ms <= MAX_MS:
        why = (
            " (with a shorter one, Spark lists the source roots every 10 ms while no segment comes)"
            if ms < MIN_TRIGGER_MS
            else ""
        )
        raise Invalid(f"expected an interval from {MIN_TRIGGER_MS} milliseconds to 100 years{why}")
    return value.strip()


_UNIT_MS = {
    "microsecond": 0.001,
    "millisecond": 1,
    "second": 1000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}


def interval_ms(value: str) -> int:
    """A checked :func:`interval` in milliseconds ("1 minute 30 seconds" → 90000)."""
    pairs = re.findall(r"([0-9]+)\s+([A-Za-z]+)", value)
    return int(sum(int(n) * _UNIT_MS[unit.lower().removesuffix("s")] for n, unit in pairs))
