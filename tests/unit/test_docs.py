"""The README and docs/ hold to the code: every command the CLI accepts and every config key the
config layer accepts is documented, and everything they document exists.

The conventions the documents follow, so that this test can read them:

- Commands: the README's "Commands" table has one row per command, its first cell a code span
  starting with ``segcompact <command>``. Every other code span or code block line that starts
  with ``segcompact <word>`` (or ``.venv/bin/segcompact <word>``) must name a command too.
- Config keys: a table whose first column is headed ``key``, under a heading naming a section
  in a code span (``## `[stream]` ``; ``[topics."<name>"]`` names the section ``topics``), lists
  that section's keys, one a row, each the row's first cell in a code span. Any document may
  hold such tables (docs/configuration.md holds them all today). A code span such as
  ``[state] ledger_table`` must name a section and key that exist.
- Links: a relative link leads to a file of the repository, and its ``#anchor``, if any, to a
  heading of that file (GitHub's anchors).
- Paths: a code span that is a repository path (``tests/unit/test_x.py``, ``spark/merge.py``,
  ``tests/e2e/test_cli.py::test_name``) names a file, folder or test that exists.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.cli import build_parser
from segcompact.config.keys import SECTIONS as JOB_SECTIONS
from segcompact.config.keys import TOPIC_KEYS
from segcompact.config.ship import SHIP_KEYS

# Every section a config file takes: the job's, and the shipper's own file's [ship].
SECTIONS = {**JOB_SECTIONS, "ship": SHIP_KEYS}

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = (README, *sorted((ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`([^`\n]+)`")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_COMMAND = re.compile(r"^(?:\S*/)?segcompact ([a-z][a-z-]*)")
_SECTION = re.compile(r"^\[([a-z_]+)(?:\.[^\]]*)?\](?: ([a-z_.]+))?")
_PATH = re.compile(
    r"^(?:[\w.*-]+/)+[\w.*-]+\.(?:py|c|md|toml|json|ya?ml|xml)(?:::\w+)?$"
    r"|^(?:tests|src|deploy|streaming|conf|jvm|docs)(?:/[\w.*-]+)*/$"
)


def cli_commands() -> set[str]:
    """The subcommands ``segcompact`` accepts, from its argparse parser."""
    return {
        name
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }


def section_keys(section: str) -> set[str]:
    """The keys the config layer accepts in ``section`` (a [topics] entry takes topic keys)."""
    return set(TOPIC_KEYS if section == "topics" else SECTIONS[section])


def code(text: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every code span and every line of a fenced code block."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif fenced:
            yield number, line
        else:
            for span in _SPAN.findall(line):
                yield number, span


def prose(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside code blocks, code spans removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, _SPAN.sub("", line)


def cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def documented_commands(readme: str) -> list[str]:
    """The command of each row of the README's "Commands" table."""
    rows = []
    in_section = False
    for _, line in prose_and_code_lines(readme):
        heading = _HEADING.match(line)
        if heading:
            in_section = heading.group(2) == "Commands"
        elif in_section and line.startswith("| `segcompact "):
            match = _COMMAND.match(cells(line)[0].strip("`"))
            assert match, line
            rows.append(match.group(1))
    return rows


def prose_and_code_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, as written."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, line


def key_tables(text: str) -> dict[str, list[tuple[int, str]]]:
    """Section -> (line, key) of every row of a key table under a heading naming the section."""
    found: dict[str, list[tuple[int, str]]] = {}
    sections: list[str] = []
    table = ""  # "" outside a table; "header", "keys" or "other" inside one
    for number, line in prose_and_code_lines(text):
        heading = _HEADING.match(line)
        if not line.startswith("|"):
            table = ""
        if heading:
            spans = _SPAN.findall(heading.group(2))
            sections = [m.group(1) for s in spans if (m := _SECTION.match(s)) and not m.group(2)]
            for section in sections:
                found.setdefault(section, [])
        elif not line.startswith("|"):
            continue
        elif not table:
            table = "header" if cells(line)[0] == "key" else "other"
        elif table == "header":  # the |---| row
            table = "keys"
        elif table == "keys":
            first = cells(line)[0]
            assert first.startswith("`") and first.endswith("`"), f"line {number}: {line}"
            assert sections, f"line {number}: a key table under no [section] heading"
            for section in sections:
                found[section].append((number, first.strip("`")))
    return found


def anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown text."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_and_code_lines(text):
        heading = _HEADING.match(line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(2).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def where(path: Path, number: int) -> str:
    return f"{path.relative_to(ROOT)}:{number}"


# --- commands --------------------------------------------------------------------------------


def test_every_command_has_one_row_in_the_readme() -> None:
    rows = documented_commands(read(README))
    assert len(rows) == len(set(rows)), f"a command listed twice in README.md: {rows}"
    missing = cli_commands() - set(rows)
    assert not missing, f"commands missing from README.md's Commands table: {sorted(missing)}"
    unknown = set(rows) - cli_commands()
    assert not unknown, f"README.md's Commands table lists commands the CLI lacks: {unknown}"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_command_a_document_names_exists(path: Path) -> None:
    commands = cli_commands()
    wrong = [
        f"{where(path, number)}: segcompact {match.group(1)}"
        for number, text in code(read(path))
        if (match := _COMMAND.match(text.strip())) and match.group(1) not in commands
    ]
    assert not wrong, f"not a command of segcompact: {wrong}"


# --- config keys -----------------------------------------------------------------------------


def documented_keys() -> dict[str, dict[str, list[str]]]:
    """Section -> key -> where each is documented, over every document."""
    out: dict[str, dict[str, list[str]]] = {}
    for path in DOCUMENTS:
        for section, rows in key_tables(read(path)).items():
            keys = out.setdefault(section, {})
            for number, key in rows:
                keys.setdefault(key, []).append(where(path, number))
    return out


def test_every_config_section_and_key_is_documented() -> None:
    documented = documented_keys()
    missing_sections = set(SECTIONS) - set(documented)
    assert not missing_sections, (
        f"sections with no `[section]` heading in docs/: {sorted(missing_sections)}"
    )
    missing = {
        section: sorted(section_keys(section) - set(documented[section])) for section in SECTIONS
    }
    missing = {s: k for s, k in missing.items() if k}
    assert not missing, (
        f"config keys missing from a `| key |` table under their `[section]` heading: {missing}"
    )


def test_every_documented_config_key_exists() -> None:
    documented = documented_keys()
    unknown_sections = set(documented) - set(SECTIONS)
    assert not unknown_sections, f"documented sections the config lacks: {unknown_sections}"
    unknown = {
        f"[{section}] {key}": places
        for section, keys in documented.items()
        for key, places in keys.items()
        if key not in section_keys(section)
    }
    assert not unknown, f"documented keys the config layer does not accept: {unknown}"
    twice = {
        f"[{section}] {key}": places
        for section, keys in documented.items()
        for key, places in keys.items()
        if len(places) > 1 and section != "topics"  # [defaults] and [topics] share one table
    }
    assert not twice, f"keys documented in two tables: {twice}"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_section_and_key_a_document_names_exists(path: Path) -> None:
    wrong = []
    for number, text in code(read(path)):
        match = _SECTION.match(text)
        if not match:
            continue
        section, key = match.groups()
        if section not in SECTIONS:
            wrong.append(f"{where(path, number)}: [{section}]")
        elif (
            key is not None
            and key not in section_keys(section)
            and not (section == "spark" and key.startswith("spark."))
        ):
            wrong.append(f"{where(path, number)}: [{section}] {key}")
    assert not wrong, f"sections or keys the config layer does not accept: {wrong}"


def test_key_tables_are_read_as_the_convention_says() -> None:
    text = """# Config

## `[alpha]`, `[beta."<name>"]`

| key | default | what |
|---|---|---|
| `one` | 1 | the first |
| `two.parts` | none | the second |

| metric | what |
|---|---|
| `not_a_key` | skipped: its table is not headed key |

## `[gamma] one` names a key, not a section

| key | what |
|---|---|
| `three` | under no section |
"""
    with pytest.raises(AssertionError, match="under no"):
        key_tables(text)
    found = key_tables(text.split("## `[gamma]")[0])
    assert found == {
        "alpha": [(7, "one"), (8, "two.parts")],
        "beta": [(7, "one"), (8, "two.parts")],
    }


# --- links and paths -------------------------------------------------------------------------


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_relative_links_lead_to_files_and_headings(path: Path) -> None:
    text = read(path)
    broken = []
    for number, line in prose(text):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists() or not dest.is_relative_to(ROOT):
                broken.append(f"{where(path, number)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(read(dest)):
                broken.append(f"{where(path, number)}: {target} (no such heading)")
    assert not broken, f"broken links: {broken}"


def _exists(span: str) -> bool:
    name, _, test = span.partition("::")
    for base in (ROOT, ROOT / "src", ROOT / "src" / "segcompact"):
        for match in base.glob(name.rstrip("/")) if "*" in name else [base / name]:
            if match.exists() and (not test or re.search(rf"\bdef {test}\(", read(match))):
                return True
    return False


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_path_a_document_names_exists(path: Path) -> None:
    missing = [
        f"{where(path, number)}: {span}"
        for number, span in code(read(path))
        if _PATH.match(span) and not _exists(span)
    ]
    assert not missing, f"paths that do not exist: {missing}"


@given(st.text(alphabet="aB1 `-.:/,_", max_size=30))
def test_an_anchor_is_a_github_slug(heading: str) -> None:
    (slug,) = anchors(f"## x{heading}\n")
    assert re.fullmatch(r"x[a-z0-9_-]*", slug)
    # GitHub: trailing blanks dropped, lower case, punctuation dropped, spaces to hyphens.
    assert slug == f"x{heading}".rstrip().lower().translate(str.maketrans(" ", "-", "`.:/,"))


def test_anchors_of_the_documents_headings() -> None:
    assert anchors('## `[defaults]`, `[topics."<name>"]`\n') == {"defaults-topicsname"}
    assert anchors("### `segcompact sla --config F [--format text|json|html]`\n") == {
        "segcompact-sla---config-f---format-textjsonhtml"
    }


def test_anchors_number_repeated_headings() -> None:
    assert anchors("# A `b` (c)\n## A b c\n### A, b: c\n") == {"a-b-c", "a-b-c-1", "a-b-c-2"}


def test_readme_stays_short() -> None:
    lines = read(README).count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move the details into docs/"
