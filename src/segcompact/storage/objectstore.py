"""Object stores (S3, ABFS, GCS) through fsspec's file system for each.

Paths keep the scheme they were configured with (``s3a://bucket/key``): Spark and this side
name the same objects the same way, and error messages name what the user wrote. An object
store has no directories, renames or links: a "directory" is a key prefix, new files are
objects uploaded whole when closed, and an exclusive create is a conditional write
(``If-None-Match: *``), which S3 (since 2024), MinIO, GCS and Azure Blob honour.
"""

from __future__ import annotations

import contextlib
import datetime
import posixpath
from collections.abc import Callable
from typing import Any, BinaryIO

from segcompact.format.io import InputStream, OutputStream
from segcompact.storage.base import FileInfo, NewFile, OnFileSystem
from segcompact.storage.multipart import PART_BYTES, MultipartNewFile, lost_race

_READ_BLOCK = 8 << 20  # one ranged GET per 8 MiB of a segment


class ObjectStore:
    """A bucket's objects as files, through an fsspec file system."""

    def __init__(self, scheme: str, fs: Any, *, s3: bool = False) -> None:
        self.scheme = scheme
        self.fs = fs
        self._s3 = s3  # fs is s3fs': new files are segcompact's own multipart uploads

    def __repr__(self) -> str:
        return f"ObjectStore({self.scheme}://)"

    def _uri(self, key: str) -> str:
        """A path fsspec returned (``bucket/key``) with this store's scheme again."""
        return f"{self.scheme}://{key.lstrip('/')}"

    def abspath(self, path: str) -> str:
        return path.rstrip("/")

    def join(self, path: str, *names: str) -> str:
        return posixpath.join(path, *names)

    def inside(self, path: str, root: str) -> bool:
        return True  # no links in a bucket

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        entries = self.fs.ls(path, detail=True)
        out = []
        for e in entries:
            key = str(e["name"]).rstrip("/")
            is_dir = e.get("type") == "directory"
            out.append(
                FileInfo(posixpath.basename(key), self._uri(key), is_dir, int(e.get("size") or 0))
            )
        if not out and not self.fs.exists(path):
            raise FileNotFoundError(path)
        return out

    def walk_files(self, path: str, on_error: Callable[[OSError], None] | None = None) -> list[str]:
        try:
            found = self.fs.find(path, withdirs=False)
        except FileNotFoundError:
            return []
        except OSError as e:
            if on_error is None:
                raise
            on_error(e)
            return []
        return sorted(self._uri(str(key)) for key in found)

    def modified_ms(self, path: str) -> int | None:
        info = self.fs.info(path)
        # Each fsspec store names it its own way: s3fs LastModified, adlfs last_modified, gcsfs
        # updated (text), the local one mtime (seconds).
        for name in ("LastModified", "last_modified", "mtime", "updated"):
            value = info.get(name)
            if isinstance(value, datetime.datetime):
                return round(value.timestamp() * 1000)
            if isinstance(value, int | float):
                return round(value * 1000)
            if isinstance(value, str):
                with contextlib.suppress(ValueError):
                    return round(datetime.datetime.fromisoformat(value).timestamp() * 1000)
        return None

    def read_bytes(self, path: str) -> bytes:
        data: bytes = self.fs.cat_file(path)
        return data

    def makedirs(self, path: str) -> None:
        pass  # prefixes need no creating

    def create_exclusive(self, path: str, data: bytes) -> bool:
        try:
            self.fs.pipe_file(path, data, mode="create")
        except OSError as e:
            if lost_race(e):
                return False
            raise
        return True

    def input_file(self, path: str) -> ObjectInputFile:
        return ObjectInputFile(self.fs, path)

    def open_seekable(self, path: str) -> BinaryIO:
        f: BinaryIO = self.fs.open(path, "rb", block_size=_READ_BLOCK)
        return f

    def output_directory(self, path: str) -> ObjectOutputDirectory:
        return ObjectOutputDirectory(self.fs, path)

    def new_file(self, path: str) -> NewFile:
        if self._s3:
            return MultipartNewFile(self.fs, path)
        return ObjectNewFile(self.fs.open(path, "xb", block_size=PART_BYTES))

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(path)

    def remove_tree(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(path, recursive=True)

    def point(self, link: str, target: str) -> None:
        pass  # no links: readers follow the publication manifest


class ObjectInputFile(OnFileSystem):
    """An object for the codec to read, front to back, in large ranged reads."""

    __slots__ = ()

    def __len__(self) -> int:
        info = self.fs.info(self.path)  # FileNotFoundError when gone
        if info.get("type") == "directory":
            raise IsADirectoryError(self.path)
        return int(info["size"])

    def open(self) -> InputStream:
        stream: InputStream = self.fs.open(
            self.path, "rb", block_size=_READ_BLOCK, cache_type="readahead"
        )
        return stream


class ObjectNewFile:
    """An upload through fsspec's file (ABFS, GCS; S3's is
    :class:`~segcompact.storage.multipart.MultipartNewFile`), completed only by :meth:`publish`,
    with ``If-None-Match: *``: until then, and after a kill -9, nothing is under the name."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def write(self, data: bytes, /) -> int:
        return int(self._file.write(data))

    def publish(self) -> bool:
        try:
            self._file.close()
        except OSError as e:
            if lost_race(e):
                return False
            raise
        return True

    def discard(self) -> None:
        if not self._file.closed:
            self._file.discard()
            # fsspec's file completes the upload when closed, even by the garbage collector:
            # a discarded one must never be.
            self._file.closed = True


class ObjectOutputDirectory(OnFileSystem):
    """A prefix for new objects, each uploaded whole when closed (never overwriting one)."""

    __slots__ = ()

    def create(self, name: str) -> OutputStream:
        stream: OutputStream = self.fs.open(posixpath.join(self.path, name), "xb")
        return stream
