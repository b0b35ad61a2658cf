"""The order of the suite's files (tests/support/suite_order.py): every directory of tests is
placed, and the slow directories' files come before the unit tests'."""

from __future__ import annotations

from pathlib import Path, PurePath

from tests.support.suite_order import DIRECTORIES, rank

TESTS = Path(__file__).parents[1]


def test_every_directory_of_tests_is_placed() -> None:
    holding = {p.relative_to(TESTS).parts[0] for p in TESTS.glob("*/**/test_*.py")}
    assert holding == set(DIRECTORIES)


def test_slow_directories_first_and_the_unit_tests_last() -> None:
    files = [TESTS / d / "test_x.py" for d in ("unit", "spark", "chaos", "e2e", "cluster")]
    ordered = sorted(files, key=lambda f: rank(f, TESTS))
    assert [f.parent.name for f in ordered] == ["chaos", "cluster", "e2e", "spark", "unit"]
    assert rank(PurePath(TESTS, "new", "test_y.py"), TESTS) == len(DIRECTORIES)
