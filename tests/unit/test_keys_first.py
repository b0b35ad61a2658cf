"""A log reduced keys first (its first pass builds no value, its second the records that leave
only) leaves exactly what the one-pass reduction of it leaves: the same rows, the same counts,
the same first timestamp, on real segment files, under every topic's rules and budgets."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segcompact.compaction.reduce import SegmentReducer
from segcompact.compaction.rules import Ranking
from segcompact.config import CompactionStrategy, TombstoneMode
from segcompact.errors import CorruptBatchError
from segcompact.format.arrow import Selection, decode_segment
from segcompact.format.attributes import Compression
from segcompact.format.batch import RecordBatch, build_batch
from segcompact.format.control import marker
from segcompact.format.record import Record
from segcompact.format.segment import SegmentReader
from segcompact.format.writer import SegmentWriter
from segcompact.storage import LocalInputFile, LocalOutputDirectory
from tests.support.second_pass import WholeChunks

HEADER = "v"
FLAG = "deleted"

header_values = st.sampled_from(
    [None, b"", b"\x01", b"true", *(struct.pack(">q", v) for v in (-1, 0, 2))]
)


@st.composite
def records(draw: st.DrawFn, offset: int) -> Record:
    headers: list[tuple[str, bytes | None]] = []
    for name in draw(st.lists(st.sampled_from([HEADER, FLAG, "x"]), max_size=3)):
        headers.append((name, draw(header_values)))
    return Record(
        offset,
        draw(st.integers(0, 5)),
        draw(st.sampled_from([b"a", b"b", b"c", b"", None])),
        draw(st.sampled_from([b"x", b"yy" * 30, b"", None])),
        tuple(headers),
        draw(st.sampled_from([0, 0, 0, 1 << 7])),  # KIP-87's tombstone bit, on some
    )


@st.composite
def segments(draw: st.DrawFn) -> list[list[bytes]]:
    """One or two segments of v2 batches: plain, transactional, control (a marker each),
    compressed or not, with gaps in their offsets; the second may go back (a damaged log)."""
    out: list[list[bytes]] = []
    offset = 0
    for _ in range(draw(st.integers(1, 2))):
        offset = draw(st.sampled_from([offset, offset, offset // 2]))
        batches = []
        for _ in range(draw(st.integers(1, 5))):
            offset += draw(st.integers(0, 2))
            if draw(st.integers(0, 9)) == 0:
                batches.append(build_batch([marker(offset, True, 3)], is_control=True))
                offset += 1
                continue
            rows = []
            for _ in range(draw(st.integers(1, 12))):
                rows.append(draw(records(offset)))
                offset += draw(st.integers(1, 2))
            batches.append(
                build_batch(
                    rows,
                    compression=draw(st.sampled_from([Compression.NONE, Compression.LZ4])),
                    is_transactional=draw(st.integers(0, 7)) == 0,
                    producer_id=7,
                )
            )
        out.append(batches)
    return out


rankings = st.builds(
    lambda strategy, tombstones: Ranking(
        strategy.value,
        HEADER if strategy is CompactionStrategy.HEADER else None,
        tombstone_mode=tombstones.value,
        tombstone_header=FLAG if tombstones is TombstoneMode.HEADER else None,
    ),
    st.sampled_from(list(CompactionStrategy)),
    st.sampled_from(list(TombstoneMode)),
)


def write(directory: Path, segments: list[list[bytes]]) -> list[Path]:
    paths = []
    for i, batches in enumerate(segments):
        base = struct.unpack_from(">q", batches[0])[0]
        (directory / str(i)).mkdir()
        with SegmentWriter(LocalOutputDirectory(directory / str(i)), base) as writer:
            for b in batches:
                writer.append(b)
        paths.append(directory / str(i) / writer.log_name)
    return paths


def decode(path: Path, chunk_records: int, **kw: Any) -> list[pa.RecordBatch]:
    reader = SegmentReader(LocalInputFile(path))
    return list(decode_segment(reader, "t", 0, chunk_records=chunk_records, **kw))


def one_pass(paths: list[Path], reducer: SegmentReducer, chunk: int) -> list[pa.RecordBatch]:
    """As ``read_segments`` reduces a log without ``keys_first``."""
    out = [rows for p in paths for c in decode(p, chunk) for rows in reducer.add(c)]
    out += reducer.finish()
    if reducer.rescan:
        again = WholeChunks(reducer).again
        out += [rows for p in paths for c in decode(p, chunk) for rows in again(c)]
    return out


def keys_first(paths: list[Path], reducer: SegmentReducer, chunk: int) -> list[pa.RecordBatch]:
    """As ``read_segments`` reduces a log keys first."""
    counts, out = [], []
    for p in paths:
        light = decode(p, chunk, values=False, headers=reducer.headers)
        counts.append(sum(c.num_rows for c in light))
        out += [rows for c in light for rows in reducer.add(c)]
    out += reducer.finish()
    assert reducer.rescan and not out  # nothing leaves before the second pass
    first = 0
    for p, count in zip(paths, counts, strict=True):
        select = reducer.select(first, count)
        out += [reducer.leave(c) for c in decode(p, chunk, select=select)]
        reducer.done(select)
        first += count
    assert reducer.rescanned
    return out


def rows(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return sorted((r for b in batches for r in b.to_pylist()), key=lambda r: r["offset"])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    segments(),
    rankings,
    st.sampled_from([1 << 30, 1, 3000]),
    st.sampled_from([1 << 30, 1, 7]),
    st.sampled_from([1, 4, 1 << 15]),
    st.booleans(),
)
def test_keys_first_leaves_what_one_pass_leaves(
    tmp_path_factory: pytest.TempPathFactory,
    segments: list[list[bytes]],
    ranking: Ranking,
    budget: int,
    records: int,
    chunk: int,
    pure: bool,
) -> None:
    paths = write(tmp_path_factory.mktemp("log"), segments)
    kw: dict[str, Any] = {"budget_bytes": budget, "budget_records": records, "pure": pure}
    whole, light = SegmentReducer(ranking, **kw), SegmentReducer(ranking, keys_first=True, **kw)
    expected, got = rows(one_pass(paths, whole, chunk)), rows(keys_first(paths, light, chunk))
    assert got == expected
    assert (light.folded, light.earliest) == (whole.folded, whole.earliest)
    # Keys first is one per key where one pass is (its rounds end where one pass's do).
    assert light.one_per_key == whole.one_per_key


def test_a_lagged_topic_is_not_read_keys_first() -> None:
    with pytest.raises(ValueError, match="lagged topic's records leave as they are"):
        SegmentReducer(Ranking(lagged=True), budget_bytes=1 << 20, keys_first=True)


def test_the_first_pass_reads_headers_only_where_the_rules_read_one() -> None:
    def reads(**rules: Any) -> bool:
        return SegmentReducer(Ranking(**rules), budget_bytes=1, keys_first=True).headers

    assert not reads() and not reads(tombstone_mode=TombstoneMode.ATTRIBUTE.value)
    assert reads(strategy=CompactionStrategy.HEADER.value, header=HEADER)
    assert reads(tombstone_mode=TombstoneMode.HEADER.value, tombstone_header=FLAG)


def three_segments(directory: Path) -> list[Path]:
    """Keys a and b, updated in every batch of three segments: the last segment's win."""
    batches = [
        [build_batch([Record(o, 0, b"ab"[o % 2 : o % 2 + 1], b"v" * 50) for o in range(s, s + 4)])]
        for s in (0, 4, 8)
    ]
    return write(directory, batches)


def test_the_second_pass_skips_batches_with_nothing_to_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their CRC is checked, their records are counted, but they are not decompressed."""
    paths = three_segments(tmp_path)
    reducer = SegmentReducer(Ranking(), budget_bytes=1 << 20, keys_first=True)
    for p in paths:
        for c in decode(p, 100, values=False, headers=False):
            list(reducer.add(c))
    list(reducer.finish())
    payloads: list[int] = []
    payload = RecordBatch.payload

    def counted(batch: RecordBatch, *args: Any) -> bytes:
        payloads.append(batch.base_offset)
        return payload(batch, *args)

    monkeypatch.setattr(RecordBatch, "payload", counted)
    kept = []
    for i, p in enumerate(paths):
        select = reducer.select(4 * i, 4)
        kept += [r["offset"] for c in decode(p, 100, select=select) for r in c.to_pylist()]
        reducer.done(select)
        assert select.decoded == 4
    assert kept == [10, 11] and payloads == [8]
    assert reducer.rescanned and reducer.one_per_key and reducer.folded == 10


def test_a_second_pass_that_reads_fewer_records_or_other_batches_is_not_one_per_key(
    tmp_path: Path,
) -> None:
    """A segment gone or rewritten between the passes (Kafka's cleaner keeps a batch's base
    offset, not its records): what leaves may not be one per key."""
    paths = three_segments(tmp_path)

    def second(selections: list[Selection]) -> SegmentReducer:
        reducer = SegmentReducer(Ranking(), budget_bytes=1 << 20, keys_first=True)
        for p in paths:
            for c in decode(p, 100, values=False, headers=False):
                list(reducer.add(c))
        list(reducer.finish())
        for i, s in enumerate(selections):
            real = reducer.select(4 * i, 4)
            real.decoded, real.batches = s.decoded, s.batches
            reducer.done(real)
        assert reducer.rescanned
        return reducer

    def read(decoded: int, base: int) -> Selection:
        s = Selection(lambda _, n: bytes(n), 4)
        s.read(base, decoded)
        return s

    assert second([read(4, 0), read(4, 4), read(4, 8)]).one_per_key
    assert not second([read(4, 0), read(4, 4), read(3, 8)]).one_per_key  # shorter
    assert not second([read(4, 0), read(4, 4), read(0, 8)]).one_per_key  # gone
    assert not second([read(4, 0), read(4, 5), read(4, 8)]).one_per_key  # other batches


def test_a_corrupt_batch_ends_both_passes_at_the_same_record(tmp_path: Path) -> None:
    """The first pass stops at a corrupt batch; the second stops before it, having read the
    records the first one did."""
    good = build_batch([Record(o, 0, b"k", b"v") for o in range(3)])
    bad = bytearray(build_batch([Record(3, 0, b"k", b"v")]))
    bad[-1] ^= 0xFF  # its CRC no longer matches
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(good + bytes(bad))
    reducer = SegmentReducer(Ranking(), budget_bytes=1 << 20, keys_first=True)
    light: list[pa.RecordBatch] = []
    with pytest.raises(CorruptBatchError):
        for c in decode_segment(SegmentReader(LocalInputFile(path)), "t", 0, values=False):
            light.append(c)
            list(reducer.add(c))
    list(reducer.finish())
    select = reducer.select(0, 3)
    kept: list[int] = []
    with pytest.raises(CorruptBatchError):  # the reader checks the CRC before it is selected
        for c in decode_segment(SegmentReader(LocalInputFile(path)), "t", 0, select=select):
            kept += [r["offset"] for r in c.to_pylist()]
    reducer.done(select)
    assert select.decoded == 3 and kept == [2] and reducer.one_per_key
