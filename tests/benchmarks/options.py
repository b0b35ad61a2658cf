"""The command-line options every benchmark shares: where it works, where its results go, the
Spark configuration of the ``segcompact`` processes it starts."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from segcompact.format.attributes import Compression


def parser(module: str, doc: str | None, *, json_file: bool = True) -> argparse.ArgumentParser:
    """``python -m tests.benchmarks.<module>``'s parser, its docstring as help, with
    ``--json F`` (see :func:`write_json`) unless not ``json_file``."""
    out = argparse.ArgumentParser(
        prog=f"python -m tests.benchmarks.{module}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if json_file:
        out.add_argument("--json", type=Path, help="also write the results to this file")
    return out


def write_json(args: argparse.Namespace, results: Any) -> None:
    """The results to ``--json``'s file, if one was given."""
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


def add_workdir(parser: argparse.ArgumentParser, name: str, what: str) -> None:
    """``--workdir``, by default ``segcompact-<name>`` in the temporary directory."""
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / f"segcompact-{name}",
        help=what,
    )


def add_spark_conf_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--spark-conf-dir",
        type=Path,
        help="SPARK_CONF_DIR of the segcompact processes (default: none, Spark's defaults)",
    )


@contextlib.contextmanager
def own_cache(work: Path) -> Iterator[Path]:
    """``XDG_CACHE_HOME`` is ``<work>/cache`` for the ``segcompact`` processes started in the
    block: the first one writes the JVM's class archive there (``spark/class_archive.py``),
    whatever an earlier run left in the user's cache."""
    cache = work / "cache"
    with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": str(cache)}):
        yield cache


def spark_conf_dir(args: argparse.Namespace, work: Path) -> Path:
    """``--spark-conf-dir``, or an empty one in ``work``: Spark's defaults, not a
    SPARK_CONF_DIR set around the benchmark."""
    if args.spark_conf_dir is not None:
        return Path(args.spark_conf_dir)
    empty = work / "spark-conf"
    empty.mkdir(parents=True, exist_ok=True)
    return empty


def add_codec_segments(parser: argparse.ArgumentParser, runs: str) -> None:
    """The codec benchmarks' segments: ``--size-mib``, ``--codec`` (repeatable), ``--dir`` where
    they are cached, ``--repeat`` (``runs``: of what, the best counting)."""
    parser.add_argument("--size-mib", type=float, default=256, help="segment size (default 256)")
    parser.add_argument(
        "--codec",
        action="append",
        choices=[c.label for c in Compression],
        help="repeatable (default: lz4 and none)",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "segcompact-bench",
        help="where generated segments are cached",
    )
    parser.add_argument("--repeat", type=int, default=3, help=f"{runs}; the best counts")


def codecs(args: argparse.Namespace) -> list[Compression]:
    """``--codec``'s, lz4 and none by default."""
    return [Compression.from_str(label) for label in args.codec or ["lz4", "none"]]
