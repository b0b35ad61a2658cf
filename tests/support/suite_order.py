"""The order ``make test`` hands test files to its pytest-xdist workers: directories whose files
take minutes first, the unit tests' short files last.

The workers take a file at a time in collection order (``--dist loadfile
--no-loadscope-reorder``), so a run that ends on short files ends with both workers busy.
pytest-xdist's own order (the files with the most tests first) put the one-test files of the
chaos, S3 and benchmark smokes last, where one worker waited minutes on the other.
"""

from __future__ import annotations

from pathlib import PurePath

# The directories of tests/, slowest files first (see docs/development.md's ten slowest).
DIRECTORIES = (
    "chaos",
    "cluster",
    "objectstore",
    "benchmarks",
    "e2e",
    "deploy",
    "interop",
    "golden",
    "browser",
    "spark",
    "fuzz",
    "unit",
)


def rank(path: PurePath, tests: PurePath) -> int:
    """Where a test file under ``tests`` goes: its directory's place in :data:`DIRECTORIES`,
    after them all when not listed (tests/unit/test_suite_order.py checks that each is)."""
    directory = path.relative_to(tests).parts[0]
    return DIRECTORIES.index(directory) if directory in DIRECTORIES else len(DIRECTORIES)
