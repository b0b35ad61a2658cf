"""The Spark home a local session's JVM starts from: pip's pyspark without its zipped Python.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on every Python
process it starts, and Python caches no compiled module it imports from a zip: each of those
processes compiles pyspark from source again, about 0.65 CPU s each (the workers' daemon, the
daemons that look up, create and plan a Python data source, the streaming source's runner: 3
to 5 CPU s of a ``run --once``). When the Spark home is the pip-installed pyspark the driver
runs, and the JVM's Python processes run this interpreter (which imports that same pyspark,
compiled), the JVM gets a Spark home of links to the real one's entries, less the two zips.

The links live in the user's cache directory (``$XDG_CACHE_HOME/segcompact``, else
``~/.cache/segcompact``), one directory per pyspark install, made once: the JVM opens its jars
through them until it exits (after this process, or in its exit handlers). Spark's own home is
used where ``SPARK_HOME`` is set, where the JVM's Python processes run another interpreter
(``PYSPARK_PYTHON``, ``PYSPARK_DRIVER_PYTHON``, ``spark.pyspark.python``,
``spark.pyspark.driver.python``), and where no such directory can be made or used.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyspark
from pyspark.find_spark_home import _find_spark_home

# Under the real home: what the JVM's Python processes would import from.
_ZIPPED = Path("python", "lib")
# Part of each directory's name: a new layout of links gets new directories.
_LAYOUT = "1"
_PYTHONS = (
    ("PYSPARK_PYTHON", "spark.pyspark.python"),
    ("PYSPARK_DRIVER_PYTHON", "spark.pyspark.driver.python"),
)


def unzipped_home(settings: Mapping[str, str]) -> str | None:
    """A Spark home without the zipped Python for a local session with these settings, or
    None where Spark's own should be used."""
    if "SPARK_HOME" in os.environ:
        return None
    for variable, key in _PYTHONS:
        python = settings.get(key) or os.environ.get(variable) or sys.executable
        if not _this_python(shutil.which(python) or python):
            return None  # another interpreter may import pyspark from the zip only
    real = Path(_find_spark_home()).resolve()
    if real != Path(pyspark.__file__).parent.resolve() or not (real / _ZIPPED).is_dir():
        return None  # a Spark distribution, whose zip is its own Python
    try:
        home = _links(real)
    except (OSError, RuntimeError, ValueError):  # RuntimeError: no home directory to find
        return None
    # What Spark's scripts need of a home (one made by another user, or emptied, is not used).
    usable = os.access(home / "bin" / "spark-submit", os.X_OK) and (home / "jars").is_dir()
    return str(home) if usable else None


@contextlib.contextmanager
def spark_home(home: str | None) -> Iterator[None]:
    """``SPARK_HOME`` is ``home`` (if not None) while the block starts the JVM."""
    if home is None:
        yield
        return
    before = os.environ.get("SPARK_HOME")
    os.environ["SPARK_HOME"] = home
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SPARK_HOME", None)
        else:
            os.environ["SPARK_HOME"] = before


def _this_python(python: str) -> bool:
    """Whether ``python`` runs this interpreter: the same file in the same directory (a venv's
    ``python`` beside its ``python3``; not the base interpreter a venv's links lead to)."""
    path, here = os.path.abspath(python), os.path.abspath(sys.executable)
    try:
        return os.path.dirname(path) == os.path.dirname(here) and os.path.samefile(path, here)
    except OSError:
        return False


def cache_dir() -> Path:
    """segcompact's folder in the user's cache directory (``XDG_CACHE_HOME``, else
    ``~/.cache``; an ``XDG_CACHE_HOME`` that is not absolute is ignored)."""
    configured = os.environ.get("XDG_CACHE_HOME", "")
    cache = Path(configured) if os.path.isabs(configured) else Path.home() / ".cache"
    return cache / "segcompact"


def _links(real: Path) -> Path:
    """The directory of links to ``real``'s entries, less ``python/lib``'s zips: made once."""
    entries = sorted(p.name for p in real.iterdir() if p.name != "__pycache__")
    named = "\0".join([_LAYOUT, str(real), pyspark.__version__, *entries])
    digest = hashlib.sha256(os.fsencode(named)).hexdigest()[:16]
    home = cache_dir() / f"spark-home-{digest}"
    if home.is_dir():
        return home
    home.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=home.parent))
    try:
        _mirror(real, building, depth=len(_ZIPPED.parts))
        try:
            building.rename(home)
        except OSError:
            if not home.is_dir():  # not another process that made it first
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return home


def _mirror(real: Path, into: Path, *, depth: int) -> None:
    """Links in ``into`` to ``real``'s entries, but the directories on the way to ``python/lib``
    are made with links to their own entries, and its zips are left out."""
    into.mkdir(exist_ok=True)
    on_the_way = _ZIPPED.parts[len(_ZIPPED.parts) - depth] if depth else None
    for entry in real.iterdir():
        if entry.name == on_the_way and entry.is_dir():
            _mirror(entry, into / entry.name, depth=depth - 1)
        elif not (depth == 0 and entry.suffix == ".zip"):
            (into / entry.name).symlink_to(entry)
