"""Memory by records as well as bytes: one batch of many tiny records (a compressed v2 batch, a
v1 wrapper) is decoded into chunks no larger than the chunk's records and bytes, with the same
rows as one chunk of it all, and a corrupt record late in it yields none of the batch."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segcompact.errors import CorruptBatchError
from segcompact.format import _crecords
from segcompact.format.arrow import decode_segment
from segcompact.format.attributes import Compression
from segcompact.format.batch import assemble_batch, build_batch
from segcompact.format.codecs import GzipCodec, ZstdCodec
from segcompact.format.columns import PyColumnBuilder
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.format.varint import decode_varint
from segcompact.storage import LocalInputFile
from tests.support import tiny_log
from tests.unit.test_columns import mutated

CColumnBuilder = _crecords.CColumnBuilder
Builder = PyColumnBuilder | _crecords.CColumnBuilder
MAKERS: list[Callable[[], Builder]] = [PyColumnBuilder, CColumnBuilder]


def _decode(path: Path, pure: bool = False, **chunk: int) -> list[pa.RecordBatch]:
    return list(decode_segment(SegmentReader(LocalInputFile(path)), "t", 0, pure=pure, **chunk))


def _data_bytes(chunk: pa.RecordBatch) -> int:
    """What the builder counts against ``chunk_bytes``: the bytes of keys and values (these
    records have no headers)."""
    sizes = [pc.sum(pc.binary_length(chunk.column(c))).as_py() or 0 for c in ("key", "value")]
    return int(sum(sizes))


@pytest.fixture(scope="module")
def tiny_segment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small batch, one gzip batch of 5000 tiny records, a v1 gzip wrapper of 3000, and one
    zstd batch of 4000 keyless records."""
    return tiny_log.write_segment(
        tmp_path_factory.mktemp("tiny"),
        0,
        [
            tiny_log.v2_batch(0, 10, Compression.NONE, keys=3),
            tiny_log.v2_batch(10, 5000, Compression.GZIP, keys=100),
            tiny_log.v1_wrapper(5010, 3000, Compression.GZIP, keys=50),
            tiny_log.v2_batch(8010, 4000, Compression.ZSTD),
        ],
    )


@pytest.mark.parametrize("pure", [False, True], ids=["c", "py"])
@pytest.mark.parametrize(("records", "nbytes"), [(300, 64 << 20), (1 << 15, 1000), (7, 50)])
def test_a_huge_batch_is_cut_into_bounded_chunks(
    tiny_segment: Path, pure: bool, records: int, nbytes: int
) -> None:
    whole = pa.Table.from_batches(_decode(tiny_segment, pure, chunk_records=1 << 20))
    chunks = _decode(tiny_segment, pure, chunk_records=records, chunk_bytes=nbytes)

    assert whole.num_rows == 12_010
    assert whole.column("offset").to_pylist() == list(range(12_010))
    assert pa.Table.from_batches(chunks).equals(whole)
    assert max(c.num_rows for c in chunks) <= records
    # A slice stops once it holds nbytes of payload: its keys and values are fewer bytes.
    assert max(_data_bytes(c) for c in chunks) <= nbytes + 12  # one tiny record over, at most
    assert len(chunks) >= 12_010 // records


def test_a_corrupt_record_at_the_end_of_a_huge_batch_yields_none_of_it(tmp_path: Path) -> None:
    good = tiny_log.v2_batch(0, 10, Compression.NONE, keys=3)
    # 5000 records and a sixth thousand the batch claims but does not hold: found at its end.
    big = tiny_log.v2_batch(10, 5000, Compression.NONE, keys=100)
    body = big[61:]
    bad = assemble_batch(
        body, 5001, base_offset=10, last_offset=5010, base_timestamp=0, max_timestamp=0
    )
    path = tiny_log.write_segment(tmp_path, 0, [good, bad])
    reader = SegmentReader(LocalInputFile(path))
    seen: list[int] = []
    with pytest.raises(CorruptBatchError, match="varint runs past the end") as info:
        for chunk in decode_segment(reader, "t", 0, chunk_records=100):
            seen += chunk.column("offset").to_pylist()
    assert seen == list(range(10))
    assert info.value.base_offset == 10 and info.value.position == len(good)
    assert (reader.valid_bytes, reader.last_offset) == (len(good), 9)


def test_a_control_batch_claiming_many_records_is_refused_before_decoding(tmp_path: Path) -> None:
    records = [Record(i, 0, b"\0\0\0\1", b"\0\0\0\0\0\0") for i in range(3)]
    path = tiny_log.write_segment(tmp_path, 0, [build_batch(records, is_control=True)])
    with pytest.raises(CorruptBatchError, match="control batch holds 3 records"):
        _decode(path)


def _pairs(ends: bytes) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in np.frombuffer(ends, np.int64).reshape(-1, 2)]


def _record_ends(payload: bytes, count: int) -> list[int]:
    ends, pos = [], 0
    for _ in range(count):
        length, pos = decode_varint(payload, pos)
        pos += length
        ends.append(pos)
    return ends


@given(case=mutated(), records=st.integers(1, 6), nbytes=st.integers(1, 120))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_cuts_check_what_append_does_and_slices_append_as_the_whole(
    case: tuple[bytes, int, int], records: int, nbytes: int
) -> None:
    payload, count, last = case
    whole = CColumnBuilder()
    try:
        whole.append(payload, count, 0, 0, 0, last)
    except ValueError:
        for make in MAKERS:
            with pytest.raises((CorruptBatchError, ValueError)):
                make().cuts(payload, count, 0, 0, last, records, nbytes)
        return
    expected = whole.finish()
    cuts = {make().cuts(payload, count, 0, 0, last, records, nbytes) for make in MAKERS}
    assert len(cuts) == 1, "the twins cut alike"
    pairs = _pairs(cuts.pop())
    ends = [0, *_record_ends(payload, count)]
    assert [b for _, b in pairs] == sorted({b for _, b in pairs})
    assert [a for a, _ in pairs] == [ends[b] for _, b in pairs]
    start, first = 0, 0
    sliced = CColumnBuilder()
    for end, stop in pairs:
        assert 1 <= stop - first <= records
        assert ends[stop - 1] - start < nbytes, "a slice ends at the record that reaches nbytes"
        if stop < count:  # cut no sooner than a bound says
            assert stop - first == records or end - start >= nbytes
        sliced.append(memoryview(payload)[start:end], stop - first, 0, 0, 0, last)
        start, first = end, stop
    assert first == count
    assert sliced.finish() == expected


def test_a_large_gzip_member_is_inflated_into_one_buffer_of_its_size() -> None:
    """zlib's growing buffer held the output twice at its end; a member that claims more than
    8 MiB is counted first, within the limit, then inflated once into its size."""
    raw = bytes(range(256)) * 40_000  # 10 MB: a batch of some 500,000 tiny records
    data = GzipCodec().compress(raw)
    tracemalloc.start()
    try:
        assert GzipCodec().decompress(data, 1 << 30) == raw
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.2 * len(raw), peak
    with pytest.raises(CorruptBatchError, match="decompresses to more than"):
        GzipCodec().decompress(data, len(raw) - 1)
    with pytest.raises(CorruptBatchError, match=r"truncated|corrupt"):
        GzipCodec().decompress(data[: len(data) // 2] + data[-4:], 1 << 30)


def test_a_zstd_frame_without_its_size_is_inflated_into_one_buffer_of_its_size() -> None:
    """Kafka's zstd-jni writes no content size: the frame is counted in steps, then inflated
    once; two frames are still read across."""
    raw = bytes(range(256)) * 40_000
    stream = zstandard.ZstdCompressor(level=3).compressobj()
    frame = stream.compress(raw) + stream.flush()
    assert zstandard.frame_content_size(frame) == -1
    tracemalloc.start()
    try:
        assert ZstdCodec().decompress(frame, 1 << 30) == raw
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.2 * len(raw), peak
    assert ZstdCodec().decompress(frame + frame, 1 << 30) == raw + raw
    with pytest.raises(CorruptBatchError, match="decompresses to more than"):
        ZstdCodec().decompress(frame, len(raw) - 1)
