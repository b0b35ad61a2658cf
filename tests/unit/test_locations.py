"""Locations collide by where they lead, not by how they are spelled: relative or absolute,
through a symlink, with ``./``, ``..``, doubled or trailing slashes, as a ``file:`` URI."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segcompact.config import parse_config
from segcompact.config.locations import where
from segcompact.errors import ConfigError

FILE = "conf/bad.toml"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The working directory: ``real/`` and ``link`` -> ``real``."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def _config(**sections: Any) -> None:
    data: dict[str, dict[str, Any]] = {
        "source": {"paths": ["elsewhere/in"]},
        "state": {"table": "elsewhere/state"},
        "output": {"path": "elsewhere/out"},
        "stream": {"checkpoint": "elsewhere/chk"},
    }
    for section, keys in sections.items():
        data[section] = {**data[section], **keys}
    parse_config(data, FILE)


def _refused(**sections: Any) -> str:
    with pytest.raises(ConfigError) as info:
        _config(**sections)
    message = str(info.value)
    assert len(message.splitlines()) == 1
    return message


def test_a_relative_output_is_the_absolute_source_it_names(work: Path) -> None:
    """The issue's case: ``output = "src"`` beside the source root written absolute."""
    (work / "src").mkdir()
    real = os.path.realpath(work / "src")
    message = _refused(source={"paths": [f"{real}/"]}, output={"path": "src"})
    assert message == (
        f'{FILE}: [output] path = "src" (at "{real}"): expected a location that neither is, '
        f'contains nor lies inside [source] paths = "{real}/" (at "{real}")'
    )


@pytest.mark.parametrize(
    ("sections", "blamed", "other"),
    [
        ({"output": {"path": "link"}, "source": {"paths": ["real"]}}, "[output] path", "[source]"),
        (
            {"source": {"paths": ["link/in"]}, "output": {"path": "./real/x/.."}},
            "[output] path",
            "[source] paths",
        ),
        (
            {"stream": {"checkpoint": "real/chk"}, "state": {"table": "link/chk/state/"}},
            "[stream] checkpoint",
            "[state] table",
        ),
        (
            {"stream": {"checkpoint": "LINKED/chk"}, "state": {"table": "real/chk/state"}},
            "[stream] checkpoint",
            "[state] table",
        ),
        (
            {
                "source": {"paths": ["real//in//"]},
                "state": {"ledger_table": "file://{work}/link/in"},
            },
            "[state] ledger_table",
            "[source] paths",
        ),
        (
            {"state": {"table": "s3a://b/st"}, "output": {"path": "S3://b//st/./out/"}},
            "[output] path",
            "[state] table",
        ),
        (
            {"state": {"table": "dbfs:/st"}, "output": {"path": "/dbfs/st/out"}},
            "[output] path",
            "[state] table",
        ),
    ],
    ids=[
        "symlink-is-source",
        "dot-dot-into-source-through-link",
        "table-in-checkpoint-through-link",
        "absolute-link-to-a-parent",
        "file-uri-through-link",
        "s3-spellings",
        "dbfs-and-its-mount",
    ],
)
def test_any_spelling_of_one_folder_is_refused(
    work: Path, sections: dict[str, dict[str, Any]], blamed: str, other: str
) -> None:
    """The later key in the file's order is blamed (both are set in the file)."""
    (work / "LINKED").symlink_to(work / "real")  # an absolute link
    for keys in sections.values():
        for key, value in keys.items():
            if isinstance(value, str):
                keys[key] = value.format(work=work)
            else:
                keys[key] = [v.format(work=work) for v in value]
    message = _refused(**sections)
    assert message.startswith(f"{FILE}: {blamed} = ")
    assert f"lies inside {other}" in message


def test_siblings_and_prefixes_are_not_nested(work: Path) -> None:
    _config(
        source={"paths": ["real/in", "link/in2"]},
        output={"path": f"{work}/real/in-out"},  # "in-out" starts with "in", lies beside it
        stream={"checkpoint": "s3a://b/in"},
        state={"table": "s3a://b/in2"},
    )


def test_where_folds_spellings(work: Path) -> None:
    real = os.path.realpath(work / "real")
    assert where("link/a/") == where("./real//a") == where(f"{work}/link/b/../a") == f"{real}/a"
    assert where(f"file://{work}/link") == real
    assert where("s3n://b//x/./y/") == where("s3a://b/x/y") == "s3a://b/x/y"
    assert where("s3a://b/") == "s3a://b"
    assert where("abfs://c@a.dfs.core.windows.net/x") == "abfss://c@a.dfs.core.windows.net/x"
    assert where("dbfs:/x/") == "/dbfs/x"


# --- any spelling, any relation: nested or equal is refused, beside is not ---------------------

_NAMES = st.sampled_from(["a", "ab", "b"])  # "ab" begins with "a": a prefix, not a parent


def _spellings(work: Path) -> list[Callable[[str], str]]:
    """Ways to write ``real/<rel>``, each leading to the same folder."""
    return [
        lambda rel: f"real/{rel}",
        lambda rel: f"{work}/real/{rel}",
        lambda rel: f"./real/./{rel}/",
        lambda rel: f"real/nowhere/../{rel}",
        lambda rel: "real//" + rel.replace("/", "//") + "//",
        lambda rel: f"link/{rel}",
        lambda rel: f"{work}/link/{rel}/",
        lambda rel: f"file://{work}/link/{rel}",
    ]


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200, deadline=None
)
@given(
    base=st.lists(_NAMES, min_size=1, max_size=3),
    extra=st.lists(_NAMES, min_size=1, max_size=2),
    relation=st.sampled_from(["same", "inside", "contains", "beside"]),
    key=st.sampled_from([("output", "path"), ("stream", "checkpoint"), ("state", "young_table")]),
    spell=st.data(),
)
def test_nested_in_any_spelling_is_refused_beside_is_not(
    work: Path,
    base: list[str],
    extra: list[str],
    relation: str,
    key: tuple[str, str],
    spell: st.DataObject,
) -> None:
    source = "/".join(base)
    if relation == "same":
        other = source
    elif relation == "inside":
        other = "/".join(base + extra)
    elif relation == "contains":
        other = "/".join(base[:-1]) or "."
    else:
        last = "b" if base[-1] != "b" else "ab"
        other = "/".join([*base[:-1], last, *extra])
    ways = _spellings(work)
    a = spell.draw(st.sampled_from(ways))(source)
    b = spell.draw(st.sampled_from(ways))(other)
    section, name = key
    if relation == "beside":
        _config(source={"paths": [a]}, **{section: {name: b}})
        return
    message = _refused(source={"paths": [a]}, **{section: {name: b}})
    assert f"[{section}] {name}" in message and "[source] paths" in message
    # Where it leads is shown: as the file spells it, or after it as (at "...").
    assert f'"{os.path.realpath(work / "real" / other)}"' in message


@pytest.mark.parametrize("inside", ["elsewhere/state", "elsewhere/out", "elsewhere/in"])
def test_the_ledger_secret_file_lies_inside_no_location(work: Path, inside: str) -> None:
    """A table's VACUUM (or a run's output, a source's reader) would own the ledger's key."""
    message = _refused(state={"table": "elsewhere/state", "ledger_secret_file": f"{inside}/k"})
    assert "[state] ledger_secret_file" in message and "neither is, contains nor lies" in message
    _config(state={"table": "elsewhere/state", "ledger_secret_file": "elsewhere/ledger.secret"})
