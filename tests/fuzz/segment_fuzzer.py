"""Coverage-guided fuzzing of the segment reader with atheris: batch framing, magic 0/1/2, the
five codecs, and both decoders (C and pure) on each input.

    python -m tests.fuzz.segment_fuzzer [libFuzzer flags] CORPUS_DIR [SEED_DIR...]

Any exception but :class:`CorruptBatchError` is a crash, and so is a difference between the
decoders: the same rows, the same error position, the same valid prefix of the file.
"""

from __future__ import annotations

import io
import sys

import atheris
import pyarrow as pa

with atheris.instrument_imports(include=["segcompact"]):
    from segcompact.errors import CorruptBatchError
    from segcompact.format.arrow import decode_segment
    from segcompact.format.segment import ReadLimits, SegmentReader

# Small bounds, so that a claimed size is refused rather than allocated.
LIMITS = ReadLimits(max_batch_bytes=1 << 20, max_uncompressed_bytes=1 << 20)


class _InMemory:
    """An input file of bytes, named as the first segment of a partition."""

    location = f"{0:020d}.log"

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def open(self) -> io.BytesIO:
        return io.BytesIO(self.data)


def _chunks(data: bytes) -> dict[str, int]:
    """Half the inputs in tiny chunks: their batches are checked whole, then sliced (cuts)."""
    if len(data) % 2:
        return {}
    return {"chunk_records": 1 + len(data) % 5, "chunk_bytes": 1 + len(data) % 97}


def read(data: bytes, *, pure: bool) -> tuple[pa.Table | None, object, int, int]:
    """The rows one decoder gives, where it stopped (if it did), and the reader's valid prefix."""
    # Checksums unchecked: a mutated batch would otherwise stop at its CRC, never reaching what
    # lies behind it (a CRC mismatch is a CorruptBatchError like any other).
    reader = SegmentReader(_InMemory(data), verify_crc=False, limits=LIMITS)
    batches: list[pa.RecordBatch] = []
    stopped = None
    try:
        batches.extend(decode_segment(reader, "t", 0, pure=pure, **_chunks(data)))
    except CorruptBatchError as e:
        stopped = (e.position, e.base_offset)
    rows = pa.Table.from_batches(batches) if batches else None
    return rows, stopped, reader.valid_bytes, reader.last_offset


def one_input(data: bytes) -> None:
    (c_rows, *c), (pure_rows, *pure) = read(data, pure=False), read(data, pure=True)
    same_rows = c_rows is pure_rows is None or (
        c_rows is not None and pure_rows is not None and c_rows.equals(pure_rows)
    )
    if not same_rows or c != pure:
        raise AssertionError(f"the C and pure decoders disagree: {c} vs {pure}")


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
