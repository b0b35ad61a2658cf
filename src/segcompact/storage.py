"""Where segcompact's files are: the one seam between its code and a file system.

Discovery and the manifest list, read and publish through :class:`FileSystem`; the codec reads
segments through :class:`~segcompact.format.io.InputFile` and writes them through
:class:`~segcompact.format.io.OutputDirectory`. Only local (POSIX) paths are implemented here;
object stores are added behind these same classes.

Segments are read through ``pyarrow.fs`` (:class:`ArrowInputFile`), which has object stores
already; on local files it reads as fast as a buffered Python file. Writes stay on Python files:
``pyarrow.fs`` can neither fsync a file nor create one exclusively, and a segment or manifest
file must be durable, and never overwrite another, before it is published.
"""

from __future__ import annotations

import errno
import os
import uuid
from dataclasses import dataclass
from typing import IO, Protocol

from pyarrow import fs as pafs

from segcompact.format.io import InputStream, OutputStream

_READ_BUFFER = 1 << 20


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One directory entry: its name, full path, kind and size in bytes (0 for directories)."""

    name: str
    path: str
    is_dir: bool
    size: int


class FileSystem(Protocol):
    """What discovery and the manifest need from storage."""

    def abspath(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[FileInfo]: ...

    def read_bytes(self, path: str) -> bytes: ...

    def makedirs(self, path: str) -> None: ...

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Publish ``data`` at ``path`` atomically; False (and nothing written) if it exists."""
        ...


class LocalFileSystem:
    """Local POSIX files through ``os``."""

    def abspath(self, path: str) -> str:
        return os.path.abspath(os.path.expanduser(path))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        out = []
        with os.scandir(path) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir()
                    size = 0 if is_dir else entry.stat().st_size
                except FileNotFoundError:
                    continue  # deleted while listing (retention, cleaner swap)
                out.append(FileInfo(entry.name, entry.path, is_dir, size))
        return out

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            # A hard link publishes the complete file and, unlike os.replace, fails when a
            # concurrent writer got there first; where links are not supported, os.replace
            # is still atomic, only not exclusive.
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError:
                if os.path.exists(path):
                    return False
                os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(directory)
        return True


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


LOCAL = LocalFileSystem()


class ArrowInputFile:
    """A file of a ``pyarrow.fs`` file system for the codec to read.

    The stream is sequential and buffered: the reader asks for a batch's first bytes and then
    for the rest, which unbuffered would cost a system call (or a request) each.
    A missing file raises :class:`FileNotFoundError`, from ``len()`` as from ``open()``.
    """

    __slots__ = ("fs", "path")

    def __init__(self, fs: pafs.FileSystem, path: str) -> None:
        self.fs = fs
        self.path = path

    @property
    def location(self) -> str:
        return self.path

    def __len__(self) -> int:
        info = self.fs.get_file_info(self.path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.path)
        if info.type != pafs.FileType.File:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.path)
        return int(info.size)

    def open(self) -> InputStream:
        # compression=None: pyarrow would otherwise decompress by file extension.
        stream: InputStream = self.fs.open_input_stream(
            self.path, compression=None, buffer_size=_READ_BUFFER
        )
        return stream


_LOCAL_ARROW = pafs.LocalFileSystem()


class LocalInputFile(ArrowInputFile):
    """A local file for the codec to read."""

    __slots__ = ()

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(_LOCAL_ARROW, os.fspath(path))


class _DurableFile:
    """A new local file whose :meth:`close` returns once its bytes are on disk."""

    def __init__(self, path: str) -> None:
        self._file: IO[bytes] = open(path, "xb")  # noqa: SIM115 (closed in close())

    def write(self, data: bytes, /) -> int:
        return self._file.write(data)

    def close(self) -> None:
        if self._file.closed:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


class LocalOutputDirectory:
    """A local directory (created if missing) for the codec to write segments into."""

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        os.makedirs(self.path, exist_ok=True)

    @property
    def location(self) -> str:
        return self.path

    def create(self, name: str) -> OutputStream:
        return _DurableFile(os.path.join(self.path, name))
