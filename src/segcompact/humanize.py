"""Times, durations and sizes as people read them, for every command's text output: ISO-8601
UTC times with milliseconds, durations in their two largest units ("6h", "1d 2h", "45s"),
sizes in binary units ("1.21 MiB"), file paths on one printable line.

Pure: JSON output keeps epoch milliseconds; these are for the lines a person reads.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# Largest first; a duration shows its largest unit and the next one, if not zero.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


def iso_time(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds: ``2026-11-27T10:18:46.123Z``."""
    # By integers: a float of seconds loses the milliseconds of times far from the epoch.
    at = _EPOCH + timedelta(milliseconds=ms)
    return at.isoformat(timespec="milliseconds")[:-6] + "Z"


def duration(ms: int) -> str:
    """A duration, truncated to its two largest units: ``0s``, ``250ms``, ``45s``, ``6h``,
    ``1d 2h``. Below a second it is in milliseconds; negative is ``-`` and the magnitude."""
    if ms < 0:
        return "-" + duration(-ms)
    if ms < 1000:
        return "0s" if ms == 0 else f"{ms}ms"
    parts: list[tuple[int, str]] = []
    rest = ms
    for name, size in _UNITS:
        if rest >= size or parts:
            parts.append((rest // size, name))
            rest %= size
        if len(parts) == 2:
            break
    return " ".join(f"{n}{name}" for n, name in parts if n)


def until(ms: int) -> str:
    """A wait until something is due: ``in 6h``, ``now``, or ``overdue by 45s`` (negative)."""
    if ms == 0:
        return "now"
    return f"in {duration(ms)}" if ms > 0 else f"overdue by {duration(-ms)}"


def ago(ms: int) -> str:
    """The age of something that happened ``ms`` ago: ``6h ago`` (negative: ``in 6h``, a
    clock behind the event's)."""
    return f"{duration(ms)} ago" if ms >= 0 else f"in {duration(-ms)}"


def size(n: int) -> str:
    """A size in bytes, in binary units to three significant figures: ``512 B``, ``1.21 MiB``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        value /= 1024
        # Below what rounds to 1024 (1048575 B is 1.00 MiB, not 1024 KiB).
        if value < 1023.5 or unit == "EiB":
            break
    digits = 0 if value >= 99.95 else 1 if value >= 9.995 else 2
    return f"{value:.{digits}f} {unit}"


def printable_path(path: str) -> str:
    """``path`` as one printable line: itself when it is, else the repr of its bytes
    (``b'/logs/good-0\\n'``, ``b'/logs/\\xff-0'``): a name holding a newline or bytes that are
    not UTF-8 (lone surrogates from ``os.listdir``) is shown, never printed raw or refused."""
    if path.isprintable():
        return path
    try:
        return repr(path.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # a surrogate no undecodable byte makes
        return ascii(path)
