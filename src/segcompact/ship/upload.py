"""Copying one segment to the target: streamed, checked on the bytes sent, published whole.

The local file is read once, front to back, by the codec's own
:class:`~segcompact.format.segment.SegmentReader` (one batch in memory at a time); every byte it
reads goes, as it is read, into the CRC-32C of the whole file and into a
:class:`~segcompact.storage.base.NewFile` at the final name. The checks are those of the bytes
sent: every batch's checksum, offsets in order, no trailing bytes, the size. Only when they all
pass is the file published (a multipart upload completed, a temporary file linked); otherwise
it is discarded and nothing appears under the name.
"""

from __future__ import annotations

from dataclasses import dataclass

from segcompact.format.crc import crc32c
from segcompact.format.io import InputFile, InputStream
from segcompact.format.segment import SegmentReader
from segcompact.storage import FileSystem
from segcompact.storage.base import NewFile

_READ_BLOCK = 1 << 20


@dataclass(frozen=True, slots=True)
class Copied:
    """What was sent, and whether it is now under the final name (False: something was
    there already)."""

    size: int
    crc32c: int
    batches: int
    last_offset: int
    published: bool


class _Sent:
    """The running size and CRC-32C of the bytes read (and sent)."""

    def __init__(self) -> None:
        self.size = 0
        self.crc = 0


class _TeeStream:
    """A stream over the local file that sends every byte read on to the new file."""

    def __init__(self, source: InputStream, sink: NewFile, sent: _Sent) -> None:
        self._source = source
        self._sink = sink
        self._sent = sent

    def read(self, size: int = -1, /) -> bytes:
        data = self._source.read(size)
        self._sink.write(data)
        self._sent.size += len(data)
        self._sent.crc = crc32c(data, self._sent.crc)
        return data

    def close(self) -> None:
        self._source.close()


class _TeeFile:
    """The local segment as the reader sees it: its name (so its base offset is checked), the
    size it had when listed, and the tee stream."""

    def __init__(self, file: InputFile, size: int, sink: NewFile, sent: _Sent) -> None:
        self._file = file
        self._size = size
        self._sink = sink
        self._sent = sent

    @property
    def location(self) -> str:
        return self._file.location

    def __len__(self) -> int:
        return self._size

    def open(self) -> InputStream:
        return _TeeStream(self._file.open(), self._sink, self._sent)


def copy_segment(source: InputFile, target_fs: FileSystem, target: str) -> Copied:
    """Copy the segment ``source`` to ``target``, checked as described above.

    Raises :class:`~segcompact.errors.CorruptBatchError` (naming the file and position) when the
    segment fails a check, :class:`FileNotFoundError` when it was deleted before it was
    opened, :class:`OSError` when the target fails; nothing is published then.
    """
    size = len(source)
    sent = _Sent()
    new_file = target_fs.new_file(target)
    try:
        reader = SegmentReader(_TeeFile(source, size, new_file, sent))
        batches = sum(1 for _ in reader)
        if sent.size != size:  # the reader stops at the size listed: a guard on the tee
            raise OSError(f"{source.location}: sent {sent.size} bytes of {size}")
        published = new_file.publish()
    except BaseException:
        new_file.discard()
        raise
    return Copied(size, sent.crc, batches, reader.last_offset, published)


def crc_of(fs: FileSystem, path: str) -> tuple[int, int]:
    """The size and CRC-32C of the file at ``path``, read front to back."""
    file = fs.input_file(path)
    stream = file.open()
    size, crc = 0, 0
    try:
        while data := stream.read(_READ_BLOCK):
            size += len(data)
            crc = crc32c(data, crc)
    finally:
        stream.close()
    return size, crc
