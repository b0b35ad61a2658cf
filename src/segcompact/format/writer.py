"""Writing a segment: ``<base offset>.log`` with its ``.index`` and ``.timeindex``."""

from __future__ import annotations

from types import TracebackType

from segcompact.format.batch import V2_HEADER
from segcompact.format.index import IndexBuilder
from segcompact.format.io import OutputDirectory


def segment_name(base_offset: int, suffix: str = ".log") -> str:
    """Kafka's file name for a segment: the base offset in 20 digits."""
    return f"{base_offset:020d}{suffix}"


class SegmentWriter:
    """Appends encoded v2 batches (from ``build_batch``) to a new segment in ``directory``.

    The three files are complete when :meth:`close` returns; publishing them atomically is the
    caller's business (write into a staging directory, then rename it).
    """

    def __init__(
        self,
        directory: OutputDirectory,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log_name = segment_name(base_offset)
        self._log = directory.create(self.log_name)
        self._closed = False
        self._index = IndexBuilder(base_offset, index_interval_bytes)
        self.size = 0
        self.last_offset: int | None = None

    def append(self, batch: bytes) -> None:
        (base_offset, _, _, _, _, _, last_delta, _, max_ts, *_) = V2_HEADER.unpack_from(batch)
        last_offset = base_offset + last_delta
        if base_offset < self.base_offset or (
            self.last_offset is not None and base_offset <= self.last_offset
        ):
            raise ValueError(
                f"batch at offset {base_offset} out of order in segment {self.log_name} "
                f"(last offset {self.last_offset})"
            )
        self._index.add(last_offset, max_ts, len(batch))
        self._log.write(batch)
        self.size += len(batch)
        self.last_offset = last_offset

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._log.close()
        for suffix, data in (
            (".index", self._index.offset_index()),
            (".timeindex", self._index.time_index()),
        ):
            index = self.directory.create(segment_name(self.base_offset, suffix))
            try:
                index.write(data)
            finally:
                index.close()

    def __enter__(self) -> SegmentWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
