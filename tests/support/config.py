"""Config files for tests: every location segcompact owns under one work directory."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from segcompact.config import StateConfig


def write_config(
    work: Path,
    sources: Iterable[Path | str],
    *,
    rolled_only: bool = True,
    stream: Mapping[str, object] | None = None,
    state: Mapping[str, object] | None = None,
    defaults: Mapping[str, object] | None = None,
    topics: Mapping[str, Mapping[str, object]] | None = None,
    base: str | None = None,
    spark: Mapping[str, str] | None = None,
) -> Path:
    """``<work>/compactor.toml`` with every table, the output and the checkpoint under ``base``
    (a URI; ``work`` when not given), each ``[state]`` table in a directory named after its key,
    and ``spark`` as its ``[spark]`` section; returns its path."""
    roots = ", ".join(json.dumps(str(p)) for p in sources)
    under = base.rstrip("/") if base is not None else str(work)

    def at(name: str) -> str:
        return json.dumps(f"{under}/{name}")

    lines = [
        "[source]",
        f"paths = [{roots}]",
        f"rolled_only = {str(rolled_only).lower()}",
        "[state]",
        *(
            f"{f.name} = {at(f.name)}"
            for f in dataclasses.fields(StateConfig)
            if f.name.endswith("table")
        ),
        *(f"{key} = {json.dumps(value)}" for key, value in (state or {}).items()),
        "[output]",
        f"path = {at('out')}",
        "[stream]",
        f"checkpoint = {at('chk')}",
        *(f"{key} = {json.dumps(value)}" for key, value in (stream or {}).items()),
        "[spark]",
        *(f"{json.dumps(key)} = {json.dumps(value)}" for key, value in (spark or {}).items()),
        "[defaults]",
        *(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in (defaults or {}).items()),
    ]
    for name, settings in (topics or {}).items():
        lines.append(f"[topics.{json.dumps(name)}]")
        lines += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in settings.items()]
    work.mkdir(parents=True, exist_ok=True)
    path = work / "compactor.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# The locations a config must name besides [source] paths (relative: these tests write
# nothing), for tests that parse a config from a dict.
REQUIRED: Mapping[str, Mapping[str, object]] = {
    "state": {"table": "data/state"},
    "output": {"path": "data/compacted"},
    "stream": {"checkpoint": "checkpoints/segcompact"},
}


def located(data: Mapping[str, object]) -> dict[str, object]:
    """``data`` with each required location it leaves out taken from :data:`REQUIRED` (its
    other sections and keys as they are)."""
    out = dict(data)
    for section, keys in REQUIRED.items():
        given = out.get(section, {})
        if isinstance(given, dict):
            out[section] = {**keys, **given}
    return out
