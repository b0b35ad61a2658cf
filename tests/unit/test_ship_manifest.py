"""The shipper's manifest: entries kept beside the data, read back as written, written once."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.errors import SegcompactError
from segcompact.ship.manifest import KINDS, Entry, PartitionManifest
from segcompact.storage import LocalFileSystem
from tests.support.ship import manifest_entries

any_entry = st.builds(
    lambda kind, start, length, t, size, crc, reason: Entry(
        kind, start, start + length, t, size=size, crc32c=crc, reason=reason
    ),
    st.sampled_from(KINDS),
    st.integers(0, 2**62),
    st.integers(1, 2**32),
    st.integers(0, 2**50),
    st.integers(0, 2**40),
    st.integers(0, 2**32 - 1),
    st.text(max_size=40),
)


@given(any_entry)
def test_an_entry_reads_back_as_written(entry: Entry) -> None:
    assert Entry.from_json(entry.to_json(), "x") == entry


def test_entries_are_read_in_offset_order_and_written_once(tmp_path: Path) -> None:
    manifest = PartitionManifest(LocalFileSystem(), str(tmp_path / "orders-0"))
    assert manifest_entries(manifest) == [] and manifest.last() is None
    later = Entry("gap", 100, 300, 5)
    first = Entry("shipped", 0, 100, 4, size=10, crc32c=7, batches=1, last_offset=99)
    assert manifest.add(later) and manifest.add(first)
    assert not manifest.add(Entry("shipped", 0, 100, 9))  # never rewritten
    assert manifest_entries(manifest) == [first, later]
    assert manifest.last() == later  # where shipping resumes: offset 300


@pytest.mark.parametrize(
    "data", [b"{", b'{"kind": "shipped"}', b'{"kind": "lost", "start": 0, "end": 1, "time_ms": 0}']
)
def test_an_entry_that_is_not_one_is_named(tmp_path: Path, data: bytes) -> None:
    manifest = PartitionManifest(LocalFileSystem(), str(tmp_path))
    Path(manifest.dir).mkdir()
    Path(manifest.path(0)).write_bytes(data)
    with pytest.raises(SegcompactError, match=r"00000000000000000000\.json: not a shipper"):
        manifest.last()


def test_a_gap_says_which_offsets_are_missing() -> None:
    assert Entry("gap", 100, 300, 0).describe() == (
        "offsets 100 to 299: deleted before it was shipped"
    )
