"""What the codec reads from and writes to: small Protocols, as pyiceberg's ``io`` has them.

The codec never opens a file of its own: a caller hands it an :class:`InputFile` (a location,
a length and ``open()``) or an :class:`OutputDirectory` (``create(name)``), and decides what
they are: local files, an object store, bytes in memory. The implementations live in
:mod:`segcompact.storage`; any object with these methods will do (Python's file objects and
pyarrow's ``NativeFile`` are streams of this shape).

Two departures from pyiceberg's ``io``, for what the codec does: an :class:`InputStream` has no
``seek``/``tell``, since the reader goes front to back and a sequential stream (pyarrow's
``open_input_stream``, an HTTP body) must do; and output goes to a directory rather than to an
``OutputFile``, since a segment is three files the writer names after its base offset.
"""

from __future__ import annotations

from typing import Protocol


class InputStream(Protocol):
    """Bytes read front to back."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes (fewer only at the end)."""
        ...

    def close(self) -> None: ...


class InputFile(Protocol):
    """A file to read: where it is, how long it is, and a stream over it."""

    @property
    def location(self) -> str:
        """The file's path or URI, as error messages name it."""
        ...

    def __len__(self) -> int: ...

    def open(self) -> InputStream: ...


class OutputStream(Protocol):
    """A new file being written; complete and durable once :meth:`close` returns."""

    def write(self, data: bytes, /) -> int: ...

    def close(self) -> None: ...


class OutputDirectory(Protocol):
    """Where a segment's files are written."""

    @property
    def location(self) -> str: ...

    def create(self, name: str) -> OutputStream:
        """A new file called ``name``; fails if one exists."""
        ...
