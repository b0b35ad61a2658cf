"""The reducer's second pass given chunks decoded whole, as the pure tests have them: each chunk's
records go through the :meth:`~segcompact.compaction.reduce.SegmentReducer.select` the source
decodes a segment with, counted as ``decode_segment`` counts what it reads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segcompact.compaction.reduce import SegmentReducer


class WholeChunks:
    """The second pass over a log's chunks in order, no more records than the first pass saw."""

    def __init__(self, reducer: SegmentReducer) -> None:
        self.reducer = reducer
        self.at = 0  # the next record's id

    def again(self, chunk: pa.RecordBatch) -> list[pa.RecordBatch]:
        """What of the next chunk leaves, classified."""
        n = chunk.num_rows
        select = self.reducer.select(self.at, n)
        self.at += n
        keep = np.frombuffer(select.flags(0, n), np.uint8).astype(bool)
        for base in chunk.column("batch_base_offset").to_pylist():
            select.read(base, 1)
        self.reducer.done(select)
        return [self.reducer.leave(chunk.filter(pa.array(keep)))] if keep.any() else []
