"""The storage seam: the codec writes and reads a segment with no file system at all, and the
local implementations behave as the source, ``dump`` and the materialiser rely on."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from segcompact.format.arrow import decode_segment
from segcompact.format.batch import build_batch
from segcompact.format.index import read_offset_index
from segcompact.format.io import InputStream, OutputStream
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.format.writer import SegmentWriter, segment_name
from segcompact.storage import LocalInputFile, LocalOutputDirectory


class _MemoryOutput(io.BytesIO):
    """A new in-memory file; its bytes land in the directory when it is closed."""

    def __init__(self, files: dict[str, bytes], name: str) -> None:
        super().__init__()
        self.files, self.name = files, name

    def close(self) -> None:
        if not self.closed:
            self.files[self.name] = self.getvalue()
        super().close()


class MemoryDirectory:
    location = "memory://segments"

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def create(self, name: str) -> OutputStream:
        if name in self.files:
            raise FileExistsError(name)
        return _MemoryOutput(self.files, name)


class MemoryFile:
    def __init__(self, location: str, data: bytes) -> None:
        self.location, self.data = location, data

    def __len__(self) -> int:
        return len(self.data)

    def open(self) -> InputStream:
        return io.BytesIO(self.data)


def _records(first: int, count: int) -> list[Record]:
    return [Record(first + i, 1_000 + i, b"k%d" % i, b"v") for i in range(count)]


def test_the_codec_writes_and_reads_a_segment_in_memory() -> None:
    directory = MemoryDirectory()
    first = build_batch(_records(0, 5))
    with SegmentWriter(directory, 0, index_interval_bytes=1) as writer:
        writer.append(first)
        writer.append(build_batch(_records(5, 5)))
    assert sorted(directory.files) == [segment_name(0, s) for s in (".index", ".log", ".timeindex")]
    index = directory.files[segment_name(0, ".index")]
    assert list(read_offset_index(index, 0)) == [(9, len(first))]
    log = MemoryFile(f"{directory.location}/{segment_name(0)}", directory.files[segment_name(0)])
    reader = SegmentReader(log)
    (rows,) = decode_segment(reader, "t", 0)
    assert rows.column("offset").to_pylist() == list(range(10))
    assert (reader.last_offset, reader.valid_bytes) == (9, len(log))


def test_a_missing_local_file_is_file_not_found(tmp_path: Path) -> None:
    # The source turns FileNotFoundError into "deleted after discovery" rather than a failure.
    gone = LocalInputFile(tmp_path / "00000000000000000000.log")
    with pytest.raises(FileNotFoundError):
        len(gone)
    with pytest.raises(FileNotFoundError):
        gone.open()
    with pytest.raises(IsADirectoryError):
        len(LocalInputFile(tmp_path))


def test_local_files_are_read_as_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = os.urandom(3 << 20)  # more than the read buffer
    (tmp_path / "x.gz").write_bytes(data)  # an extension pyarrow would decompress by default
    monkeypatch.chdir(tmp_path)
    file = LocalInputFile("x.gz")
    stream = file.open()
    try:
        head = stream.read(17)
        rest = stream.read(len(data))
        assert head + rest == data and stream.read(1) == b""
    finally:
        stream.close()
    assert len(file) == len(data) and file.location == "x.gz"


def test_local_output_never_overwrites(tmp_path: Path) -> None:
    directory = LocalOutputDirectory(tmp_path / "new")
    out = directory.create("a")
    out.write(b"first")
    out.close()
    out.close()  # closing twice is harmless
    with pytest.raises(FileExistsError):
        directory.create("a")
    assert (tmp_path / "new" / "a").read_bytes() == b"first"
