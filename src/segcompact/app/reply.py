"""What a command says: its lines for stdout, its error lines for stderr, its exit code."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_DATA = 1  # corrupt input, a failed job, a check that failed
EXIT_USAGE = 2  # a mistake the user can fix before a run


@dataclass(frozen=True, slots=True)
class Reply:
    """``lines`` go to stdout and ``errors`` to stderr, a line each (a line may hold a whole
    report, newlines and all); ``code`` is the exit code."""

    lines: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    code: int = 0
