"""How a config error spells what it found: values as TOML writes them, on one line, short."""

from __future__ import annotations

import difflib
import enum
import json
import re
from collections.abc import Callable, Iterable


class Shown(str):
    """A value already formatted for a message."""


def show(value: object) -> str:
    """``value`` as TOML would spell it, short and on one line (a :class:`Shown` as it is)."""
    if isinstance(value, Shown):
        return str(value)
    if isinstance(value, str):
        text = json.dumps(value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list):
        text = "[" + ", ".join(map(show, value)) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{show_key(k)} = {show(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, enum.Enum):
        text = json.dumps(str(value.value))
    else:
        text = str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def show_key(key: str) -> str:
    """``key`` bare if TOML allows it so, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9._-]+", key) else json.dumps(key)


def one_line(text: str) -> str:
    return " ".join(text.splitlines())


def suggest(name: str, valid: Iterable[str], spell: Callable[[str], str]) -> str:
    """ "; did you mean …?" naming the closest of ``valid``, or "" if none is close."""
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f"; did you mean {spell(close[0])}?" if close else ""
