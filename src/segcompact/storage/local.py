"""Local (POSIX) files: the embedded default, and FUSE mounts of object stores.

Segments are read through buffered Python files (:class:`LocalInputFile`): as fast as
``pyarrow.fs`` on local files, without loading pyarrow (some 50 MiB) into a process that has no
other use for it, such as ``segcompact ship``. A segment or manifest file is written durable
(fsynced), and never over another, before it is published.

A FUSE mount of an object store (Databricks' ``/Volumes/…`` and ``/dbfs/…``) has neither hard
links nor symlinks: there an exclusive create writes the file with ``O_EXCL`` (the mount
uploads it whole when it is closed) and :meth:`LocalFileSystem.point` does nothing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from typing import IO, BinaryIO

from segcompact.format.io import InputStream, OutputStream
from segcompact.storage.base import FileInfo

_READ_BUFFER = 1 << 20


class LocalFileSystem:
    """Local POSIX files through ``os``; ``links=False`` for mounts without hard or symlinks."""

    def __init__(self, *, links: bool = True) -> None:
        self._links = links

    def __repr__(self) -> str:
        return f"LocalFileSystem(links={self._links})"

    def join(self, path: str, *names: str) -> str:
        return os.path.join(path, *names)

    def walk_files(self, path: str, on_error: Callable[[OSError], None] | None = None) -> list[str]:
        if os.path.isfile(path) and not os.path.islink(path):
            return [path]
        found = []

        def fail(e: OSError) -> None:
            if isinstance(e, FileNotFoundError):
                return  # gone while walking: nothing there
            if on_error is None:
                raise e
            on_error(e)

        for directory, dirs, names in os.walk(path, onerror=fail):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(directory, name)
                try:
                    if stat.S_ISREG(os.lstat(full).st_mode):  # not symlinks, FIFOs, sockets
                        found.append(full)
                except FileNotFoundError:
                    continue
        return found

    def input_file(self, path: str) -> LocalInputFile:
        return LocalInputFile(path)

    def open_seekable(self, path: str) -> BinaryIO:
        return open(path, "rb")

    def output_directory(self, path: str) -> LocalOutputDirectory:
        return LocalOutputDirectory(path)

    def new_file(self, path: str) -> LocalNewFile:
        return LocalNewFile(path, links=self._links)

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    def remove_tree(self, path: str) -> None:
        if os.path.islink(path) or os.path.isfile(path):
            self.remove(path)
        elif os.path.exists(path):
            shutil.rmtree(path)

    def point(self, link: str, target: str) -> None:
        if not self._links:
            return
        # Named for the link by a hash: ``<link>.publishing`` would pass the 255-byte file-name
        # limit for the longest partition names Kafka allows.
        directory, name = os.path.split(link)
        digest = hashlib.sha256(os.fsencode(name)).hexdigest()[:32]
        tmp = os.path.join(directory, f".{digest}.publishing")
        if os.path.lexists(tmp):
            os.remove(tmp)
        os.symlink(os.path.relpath(target, os.path.dirname(link)), tmp)
        os.replace(tmp, link)
        _fsync_dir(os.path.dirname(link))

    def abspath(self, path: str) -> str:
        return os.path.abspath(os.path.expanduser(path))

    def inside(self, path: str, root: str) -> bool:
        real, top = os.path.realpath(path), os.path.realpath(root)
        return real == top or real.startswith(top.rstrip(os.sep) + os.sep)

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

    def modified_ms(self, path: str) -> int | None:
        return os.stat(path).st_mtime_ns // 1_000_000

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        if not self._links:
            return _write_new(path, data)
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        _write_new(tmp, data)
        try:
            # A hard link publishes the complete file and, unlike os.replace, fails when a
            # concurrent writer got there first.
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError:  # no hard links here after all
                return _write_new(path, data)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _fsync_dir(directory)
        return True


def _write_new(path: str, data: bytes) -> bool:
    """``data`` in a new file at ``path`` (``O_EXCL``), durable; False if it exists."""
    try:
        f = open(path, "xb")  # noqa: SIM115 (closed below)
    except FileExistsError:
        return False
    with f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return True


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


LOCAL = LocalFileSystem()


class LocalInputFile:
    """A local file for the codec to read.

    The stream is sequential and buffered: the reader asks for a batch's first bytes and then
    for the rest, which unbuffered would cost a system call each. A missing file raises
    :class:`FileNotFoundError`, from ``len()`` as from ``open()``; anything but a regular file
    :class:`IsADirectoryError` from ``len()``.
    """

    __slots__ = ("path",)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    @property
    def location(self) -> str:
        return self.path

    def __len__(self) -> int:
        info = os.stat(self.path)
        if not stat.S_ISREG(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.path)
        return info.st_size

    def open(self) -> InputStream:
        return open(self.path, "rb", buffering=_READ_BUFFER)


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


class LocalNewFile:
    """A file written under a temporary name beside ``path`` (a hidden ``.<name>.<uuid>.tmp``,
    which discovery never takes for a segment), then linked (or, without hard links, renamed)
    to ``path``: a reader sees the whole file or none."""

    def __init__(self, path: str, *, links: bool) -> None:
        self.path = path
        self._links = links
        directory, name = os.path.split(path)
        os.makedirs(directory, exist_ok=True)
        self._tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        self._file: IO[bytes] = open(self._tmp, "xb")  # noqa: SIM115 (closed in publish/discard)

    def write(self, data: bytes, /) -> int:
        return self._file.write(data)

    def publish(self) -> bool:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        try:
            if self._links:
                try:
                    os.link(self._tmp, self.path)  # fails when the name is taken, unlike rename
                except FileExistsError:
                    return False
            elif os.path.exists(self.path):
                return False
            else:  # a FUSE mount without links: one shipper per lease, so no race to lose
                os.rename(self._tmp, self.path)
        finally:
            self.discard()
        _fsync_dir(os.path.dirname(self.path))
        return True

    def discard(self) -> None:
        self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._tmp)


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
