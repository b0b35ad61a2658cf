"""What segcompact needs from a file system, whatever the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from segcompact.format.io import InputFile, OutputDirectory


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One directory entry: its name, full path, kind and size in bytes (0 for directories)."""

    name: str
    path: str
    is_dir: bool
    size: int


class OnFileSystem:
    """A file or directory of a file system client (fsspec's): where it is."""

    __slots__ = ("fs", "path")

    def __init__(self, fs: Any, path: str) -> None:
        self.fs = fs
        self.path = path

    @property
    def location(self) -> str:
        return self.path


class NewFile(Protocol):
    """A file being written that no reader sees until :meth:`publish`: a temporary name renamed
    (local), a multipart upload completed last (object store)."""

    def write(self, data: bytes, /) -> int: ...

    def publish(self) -> bool:
        """Make the file appear whole under its name, durable; False (and nothing published)
        when something is there already."""
        ...

    def discard(self) -> None:
        """Throw the bytes written away; nothing appears under the name."""
        ...


class FileSystem(Protocol):
    """A file system's paths are strings in its own form (a local path, ``s3a://b/k``)."""

    def abspath(self, path: str) -> str: ...

    def join(self, path: str, *names: str) -> str: ...

    def inside(self, path: str, root: str) -> bool:
        """Whether ``path``, its symlinks followed, still lies under ``root`` (always true
        where there are no links)."""
        ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[FileInfo]:
        """The entries of a directory; :class:`FileNotFoundError` when there is none."""
        ...

    def walk_files(self, path: str, on_error: Callable[[OSError], None] | None = None) -> list[str]:
        """Every regular file under ``path`` (not following symlinks), in path order; a part
        that cannot be listed goes to ``on_error`` (raised without one)."""
        ...

    def read_bytes(self, path: str) -> bytes: ...

    def modified_ms(self, path: str) -> int | None:
        """When the file was last written (epoch ms); None when the store does not say."""
        ...

    def makedirs(self, path: str) -> None: ...

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Publish ``data`` at ``path`` in one atomic write; False (and nothing written) if
        something is there already, written by anyone."""
        ...

    def input_file(self, path: str) -> InputFile: ...

    def open_seekable(self, path: str) -> BinaryIO:
        """A file to read at any position (Parquet's footer first)."""
        ...

    def new_file(self, path: str) -> NewFile:
        """A file of any size, streamed in, that appears at ``path`` whole or not at all."""
        ...

    def output_directory(self, path: str) -> OutputDirectory:
        """A directory for new files, each complete and durable once closed."""
        ...

    def remove(self, path: str) -> None:
        """Remove a file; nothing when it is gone already."""
        ...

    def remove_tree(self, path: str) -> None:
        """Remove a directory and everything in it; nothing when it is gone already."""
        ...

    def point(self, link: str, target: str) -> None:
        """Make ``link`` a symlink to ``target``, atomically replacing what was there (local
        file systems); nothing where there are no links."""
        ...
