"""The Databricks Asset Bundle JSON schema, for checking ``deploy/databricks/databricks.yml``.

The Databricks CLI's Go module carries the schema its ``databricks bundle validate`` checks a
bundle against (``bundle/schema/jsonschema.json``, what ``databricks bundle schema`` prints).
``go mod download`` fetches one version of the module through the Go module proxy, checked
against the Go checksum database, into the module cache; the schema is copied from there into
``.tools/bundle-schema/`` (ignored by git), so later runs need neither ``go`` nor the network.
Where the proxy does not serve the module, a copy of that version's schema (``databricks bundle
schema > F`` with that CLI version, or the file from the CLI's source at that tag) can be put
into the cache instead::

    python -m tests.support.bundle_schema              # prints the cached schema file
    python -m tests.support.bundle_schema --from F     # caches F as this version's schema

The schema's patterns are Go (RE2) regular expressions with Unicode classes (``\\p{L}``), which
Python's ``re`` lacks: :func:`load` rewrites the ones it has into ``re`` equivalents.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from tests.support.crds import download_module

DATABRICKS_CLI_MODULE = "github.com/databricks/cli"
# The CLI version whose schema the bundle is checked against. The newest release is 1.22.1
# (databricks-bundles 1.22.1, 2026-10-22); 1.13.0 is the newest whose source could be had here.
DATABRICKS_CLI_VERSION = "v1.13.0"
SCHEMA_PATH = "bundle/schema/jsonschema.json"
CACHE_DIR = Path(__file__).resolve().parents[2] / ".tools" / "bundle-schema"

# RE2's Unicode classes as Python's re spells them (letters; letters or digits).
_UNICODE_CLASSES = {
    r"[\p{L}\p{N}]": r"[^\W_]",
    r"\p{L}": r"[^\W\d_]",
    r"\p{N}": r"\d",
}


def cached_file(version: str = DATABRICKS_CLI_VERSION) -> Path:
    return CACHE_DIR / version / Path(SCHEMA_PATH).name


def schema_file(version: str = DATABRICKS_CLI_VERSION) -> Path:
    """The cached schema of the CLI ``version``, downloaded with its Go module when missing.

    Raises ``FileNotFoundError`` (no ``go``) or ``RuntimeError`` (the download failed).
    """
    cached = cached_file(version)
    if cached.is_file():
        return cached
    source = download_module(DATABRICKS_CLI_MODULE, version) / SCHEMA_PATH
    if not source.is_file():
        raise FileNotFoundError(f"{DATABRICKS_CLI_MODULE}@{version} has no {SCHEMA_PATH}")
    return store(source, version)


def store(source: Path, version: str = DATABRICKS_CLI_VERSION) -> Path:
    """Put ``source`` into the cache as the schema of ``version``, after checking it is one."""
    with source.open("rb") as f:
        schema = json.load(f)
    if "bundle" not in schema.get("properties", {}) or "$defs" not in schema:
        raise ValueError(f"{source} is not a bundle schema (no properties.bundle or $defs)")
    cached = cached_file(version)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
    shutil.copyfile(source, partial)  # a plain copy: the module cache's files are read-only
    os.replace(partial, cached)
    return cached


def load(version: str = DATABRICKS_CLI_VERSION) -> dict[str, Any]:
    """The schema, its patterns rewritten for Python's ``re``."""
    text = schema_file(version).read_text(encoding="utf-8")
    for go, python in _UNICODE_CLASSES.items():
        text = text.replace(json.dumps(go)[1:-1], json.dumps(python)[1:-1])
    if r"\\p{" in text or r"\\P{" in text:
        raise ValueError(f"{SCHEMA_PATH} of {version} has a Unicode class not rewritten here")
    schema: dict[str, Any] = json.loads(text)
    return schema


def strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with unknown top-level keys rejected: the schema leaves them open, and
    ``databricks bundle validate`` warns about each (``unknown field``)."""
    return {**schema, "additionalProperties": False}


def validator(schema: Mapping[str, Any]) -> jsonschema.Draft202012Validator:
    """A validator of ``schema`` (``$defs`` and ``$ref``: JSON Schema 2020-12)."""
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(check: jsonschema.Draft202012Validator, document: Any) -> list[str]:
    """``path: message`` for each error in ``document``, where it is.

    Most values may also be a ``${var.x}`` reference, so a wrong value fails a ``oneOf`` at
    its parent; the errors of the alternative that got deepest say what is wrong and where.
    """
    return sorted({_describe(leaf) for e in check.iter_errors(document) for leaf in _leaves(e)})


def _leaves(error: ValidationError) -> list[ValidationError]:
    if not error.context:
        return [error]
    by_branch: dict[Any, list[ValidationError]] = {}
    for e in error.context:
        by_branch.setdefault(e.relative_schema_path[0], []).append(e)
    # The alternative that matched furthest: deepest error, then not the ${var} string one.
    branch = max(by_branch.values(), key=lambda errors: max(map(_depth, errors)))
    return [leaf for e in branch for leaf in _leaves(e)]


def _depth(error: ValidationError) -> tuple[int, bool]:
    return len(error.absolute_path), error.validator not in ("type", "pattern")


def _describe(error: ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path) or "(top)"
    return f"{path}: {error.message}"


def _main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.support.bundle_schema")
    parser.add_argument("--version", default=DATABRICKS_CLI_VERSION, help="Databricks CLI version")
    parser.add_argument(
        "--from", dest="source", type=Path, help="a copy of that version's jsonschema.json"
    )
    args = parser.parse_args(None if argv is None else list(argv))
    print(store(args.source, args.version) if args.source else schema_file(args.version))


if __name__ == "__main__":
    _main()
