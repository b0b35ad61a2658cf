"""The exceptions segcompact raises; every one derives from :class:`SegcompactError`."""

from __future__ import annotations

import re


class SegcompactError(Exception):
    """Raised for any failure segcompact reports to its user."""


class ConfigError(SegcompactError):
    """Raised when a configuration file, key or value is not allowed."""


class UsageError(SegcompactError):
    """Raised when a command-line argument is wrong or a named file is missing."""


class SourceError(SegcompactError):
    """Raised when the segment manifest is unreadable or inconsistent with the checkpoint."""


class CorruptBatchError(SegcompactError):
    """Raised when a batch in a segment cannot be decoded.

    Carries where it is (file, byte position, the batch's base offset when it could be read)
    and why, so a partition can be marked uncleanable with a precise reason.
    """

    def __init__(
        self,
        reason: str,
        *,
        file: str | None = None,
        position: int | None = None,
        base_offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.file = file
        self.position = position
        self.base_offset = base_offset
        super().__init__(self._message())

    def _message(self) -> str:
        where = []
        if self.file is not None:
            where.append(self.file)
        if self.position is not None:
            where.append(f"position {self.position}")
        if self.base_offset is not None:
            where.append(f"base offset {self.base_offset}")
        return f"corrupt batch ({', '.join(where)}): {self.reason}" if where else self.reason

    def located(
        self,
        *,
        file: str | None = None,
        position: int | None = None,
        base_offset: int | None = None,
    ) -> CorruptBatchError:
        """A copy with the location filled in where this error did not know it."""
        return CorruptBatchError(
            self.reason,
            file=self.file if self.file is not None else file,
            position=self.position if self.position is not None else position,
            base_offset=self.base_offset if self.base_offset is not None else base_offset,
        )


# "OSError: [Errno 28] No space left on device" in a Python traceback that Spark wraps in Java
# exceptions and Py4J's messages: the line that says what went wrong.
_EXCEPTION_LINE = re.compile(r"^\s*(?P<type>[A-Za-z_][\w.]*(?:Error|Exception)): (?P<text>.+)$")
_WRAPPERS = ("org.", "java.", "scala.", "py4j.", "pyspark.errors", "Py4J")


def root_cause(message: str) -> str:
    """The first line of ``message`` naming an exception Spark or Py4J did not wrap it in (a
    Python worker's, the driver's), else its first line: one line for a user."""
    lines = message.strip().splitlines()
    for line in lines:
        m = _EXCEPTION_LINE.match(line)
        if m and not m["type"].startswith(_WRAPPERS):
            return line.strip()
    return lines[0].strip() if lines else ""
