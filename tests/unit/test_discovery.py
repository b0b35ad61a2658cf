"""Segment discovery in Kafka's log-dir layout and the append-only manifest that numbers them."""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segcompact.discovery import SegmentFile, by_turns, discover, skipped_directories
from segcompact.errors import ConfigError, SourceError
from segcompact.manifest import Manifest, manifest_id_of, offset_of, seq_of
from segcompact.storage import LocalFileSystem, Storage


def _touch(path: Path, data: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _segment(root: Path, topic: str, partition: int, base: int, size: int = 10) -> Path:
    return _touch(root / f"{topic}-{partition}" / f"{base:020d}.log", b"x" * size)


def _found(segments: list[SegmentFile]) -> list[tuple[str, int, int]]:
    return [(s.topic, s.partition, s.base_offset) for s in segments]


# --- discovery ------------------------------------------------------------------------------


def test_discovery_finds_segments_and_ignores_everything_else(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    for base in (0, 100, 200):
        _segment(root, "orders", 0, base)
    for suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
        _touch(root / "orders-0" / f"{100:020d}{suffix}")
    for suffix in (".log.deleted", ".log.cleaned", ".log.swap"):
        _touch(root / "orders-0" / f"{300:020d}{suffix}")
    _touch(root / "orders-0" / "leader-epoch-checkpoint")
    _touch(root / "orders-0" / "partition.metadata")
    _touch(root / "orders-0" / "1234.log")  # not 20 digits
    _touch(root / "orders-0" / f"{500:020d}.log\n")
    (root / "orders-0" / f"{400:020d}.log").mkdir()  # a directory with a segment's name
    _touch(root / "orders-0.abcdef-delete" / f"{0:020d}.log")
    _touch(root / "orders-0.abcdef-future" / f"{0:020d}.log")
    _touch(root / "notapartition" / f"{0:020d}.log")
    _touch(root / "orders-x" / f"{0:020d}.log")
    _touch(root / "orders-7", b"a file named like a partition directory")
    _touch(root / "recovery-point-offset-checkpoint")
    (root / "empty-3").mkdir()

    assert _found(discover([str(root)], rolled_only=False)) == [
        ("orders", 0, 0),
        ("orders", 0, 100),
        ("orders", 0, 200),
    ]


def test_odd_directories_are_skipped_and_each_named_with_why(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _segment(root, "good", 0, 0)
    odd = {
        "good-0\n": "character '\\n' is not allowed",  # `$` once read it as good-0
        os.fsdecode(b"\xff-0"): "not valid UTF-8",
        "lz-0007": "partition 0007 has a leading zero",
        "t-0.abcdef-delete": "a partition Kafka is deleting",
        "notapartition": "does not end in -<partition number>",
    }
    for name in odd:
        _touch(root / name / f"{0:020d}.log", b"x" * 10)
    _touch(root / "meta.properties")  # a broker's files are no directories: not named
    _touch(root / "a-1", b"a file named like a partition directory")

    assert _found(discover([str(root)], rolled_only=False)) == [("good", 0, 0)]
    skipped = skipped_directories([str(root), str(tmp_path / "gone")], Storage())
    assert [s.path for s in skipped] == sorted(
        [str(tmp_path / "gone"), *(str(root / name) for name in odd)]
    )
    why = {s.path: s.reason for s in skipped}
    assert why[str(tmp_path / "gone")] == "source root does not exist"
    for name, reason in odd.items():
        assert why[str(root / name)].startswith("not a partition directory: "), name
        assert reason in why[str(root / name)], name


def test_rolled_only_holds_back_the_active_segment_of_each_partition(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    for base in (0, 50):
        _segment(root, "orders", 0, base)
    _segment(root, "orders", 1, 0)  # the only segment: active
    _segment(root, "pay-ments", 3, 7)
    _segment(root, "pay-ments", 3, 9)

    assert _found(discover([str(root)])) == [("orders", 0, 0), ("pay-ments", 3, 7)]
    assert _found(discover([str(root)], rolled_only=False)) == [
        ("orders", 0, 0),
        ("orders", 0, 50),
        ("orders", 1, 0),
        ("pay-ments", 3, 7),
        ("pay-ments", 3, 9),
    ]


def test_discovery_reports_paths_and_sizes_sorted_over_several_roots(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _segment(b, "zeta", 0, 0, size=3)
    _segment(a, "alpha", 10, 5, size=4)
    _segment(a, "alpha", 2, 5, size=5)
    _segment(b, "alpha", 2, 1, size=6)

    found = discover([str(b), str(a)], rolled_only=False)

    assert _found(found) == [("alpha", 2, 1), ("alpha", 2, 5), ("alpha", 10, 5), ("zeta", 0, 0)]
    assert found[0] == SegmentFile("alpha", 2, 1, str(b / "alpha-2" / f"{1:020d}.log"), 6)
    assert [s.size for s in found] == [6, 5, 4, 3]


def test_active_segment_is_per_partition_directory(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _segment(a, "t", 0, 0)
    _segment(a, "t", 0, 10)
    _segment(b, "t", 0, 20)  # another log dir's copy of the partition: its own active one
    assert _found(discover([str(a), str(b)])) == [("t", 0, 0)]


def test_relative_roots_resolve_to_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _segment(tmp_path / "logs", "t", 0, 0)
    monkeypatch.chdir(tmp_path)
    (found,) = discover(["logs"], rolled_only=False)
    assert found.path == str(tmp_path / "logs" / "t-0" / f"{0:020d}.log")


def test_symlinks_out_of_a_root_are_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "logs", tmp_path / "elsewhere"
    _segment(root, "kept", 0, 0)
    _segment(outside, "away", 0, 0)
    (root / "away-0").symlink_to(outside / "away-0")  # a partition directory out of the root
    secret = _touch(outside / "secret", b"x" * 10)
    (root / "kept-0" / f"{5:020d}.log").symlink_to(secret)  # a segment out of the root
    (root / "alias-0").symlink_to(root / "kept-0")  # a link that stays inside is followed
    found = discover([str(root)], rolled_only=False)
    assert _found(found) == [("alias", 0, 0), ("kept", 0, 0)]


def test_a_missing_root_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"source root .*nowhere does not exist"):
        discover([str(tmp_path / "nowhere")])


# --- manifest -------------------------------------------------------------------------------


def test_manifest_numbers_segments_densely_and_appends_one_file_per_discovery(
    tmp_path: Path,
) -> None:
    root, directory = tmp_path / "logs", tmp_path / "manifest"
    for base in (0, 10, 20):
        _segment(root, "b", 0, base)
    _segment(root, "a", 1, 0)
    _segment(root, "a", 1, 5)
    manifest = Manifest(str(directory))

    added = manifest.discover([str(root)])

    assert [(e.seq, e.file.topic, e.file.partition, e.file.base_offset) for e in added] == [
        (1, "a", 1, 0),
        (2, "b", 0, 0),
        (3, "b", 0, 10),
    ]
    assert sorted(os.listdir(directory)) == ["0.json"]
    assert manifest.discover([str(root)]) == []  # nothing new: no file
    assert sorted(os.listdir(directory)) == ["0.json"]

    _segment(root, "b", 0, 30)  # rolls b-0: 20 is now eligible
    _segment(root, "a", 1, 9)  # rolls a-1: 5 is now eligible
    added = manifest.discover([str(root)])

    assert [(e.seq, e.file.topic, e.file.base_offset) for e in added] == [(4, "a", 5), (5, "b", 20)]
    assert sorted(os.listdir(directory)) == ["0.json", "1.json"]
    assert manifest.latest_seq == 5


def test_manifest_is_stable_across_instances_and_restarts(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", str(tmp_path / "manifest")
    for base in (0, 10, 20):
        _segment(root, "t", 0, base)
    first = Manifest(directory)
    first.discover([str(root)])
    _segment(root, "t", 0, 30)
    first.discover([str(root)])

    again = Manifest(directory)  # a restarted query
    assert again.entries() == first.entries()
    assert again.discover([str(root)]) == []
    assert [e.seq for e in again.entries()] == [1, 2, 3]
    assert again.between(1, 3) == list(first.entries()[1:3])
    assert again.between(0, 0) == []
    assert again.between(3, 3) == []


def test_an_older_segment_arriving_late_gets_a_new_seq(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", str(tmp_path / "manifest")
    _segment(root, "t", 0, 100)
    _segment(root, "t", 0, 200)
    manifest = Manifest(directory)
    manifest.discover([str(root)])

    _segment(root, "t", 0, 0)  # copied in late, e.g. restored from an archive
    added = manifest.discover([str(root)])

    assert [(e.seq, e.file.base_offset) for e in added] == [(2, 0)]
    entries = Manifest(directory).entries()
    assert [(e.seq, e.file.base_offset) for e in entries] == [(1, 100), (2, 0)]


def test_manifest_files_are_complete_json_and_no_temp_file_remains(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", tmp_path / "manifest"
    _segment(root, "t", 0, 0, size=17)
    _segment(root, "t", 0, 1)
    Manifest(str(directory)).discover([str(root)])

    assert os.listdir(directory) == ["0.json"]
    doc = json.loads((directory / "0.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{32}", doc["manifest"])
    assert doc == {
        "version": 1,
        "manifest": doc["manifest"],
        "entries": [
            {
                "seq": 1,
                "topic": "t",
                "partition": 0,
                "base_offset": 0,
                "path": str(root / "t-0" / f"{0:020d}.log"),
                "size": 17,
            }
        ],
    }


def test_leftover_temp_files_are_ignored(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", tmp_path / "manifest"
    _touch(directory / ".0.json.deadbeef.tmp", b'{"version": 1, "entr')  # a crashed writer
    _segment(root, "t", 0, 0)
    _segment(root, "t", 0, 1)
    (entry,) = Manifest(str(directory)).discover([str(root)])
    assert entry.seq == 1
    assert (directory / "0.json").exists()


def test_exclusive_create_never_overwrites(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    target = str(tmp_path / "0.json")
    assert fs.create_exclusive(target, b"first")
    assert not fs.create_exclusive(target, b"second")
    assert Path(target).read_bytes() == b"first"
    assert os.listdir(tmp_path) == ["0.json"]


class _RacingFileSystem(LocalFileSystem):
    """Lets another writer publish first, once, just before this one creates its file."""

    def __init__(self, other: Manifest, segments: list[SegmentFile]) -> None:
        super().__init__()
        self.other, self.segments = other, segments

    def create_exclusive(self, path: str, data: bytes) -> bool:
        if self.segments:
            segments, self.segments = self.segments, []
            self.other.append(segments)
        return super().create_exclusive(path, data)


def test_concurrent_writers_agree_on_every_seq(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", str(tmp_path / "manifest")
    for base in (0, 1, 2):
        _segment(root, "t", 0, base)
    seg0, seg1 = discover([str(root)])
    other = Manifest(directory)
    racing = Manifest(directory, fs=_RacingFileSystem(other, [seg0]))

    added = racing.append([seg0, seg1])

    # The other writer published seg0 as 0.json; this one re-read and added only seg1.
    assert [(e.seq, e.file.base_offset) for e in added] == [(2, 1)]
    assert sorted(os.listdir(directory)) == ["0.json", "1.json"]
    assert Manifest(directory).entries() == racing.entries() == other.entries()
    assert racing.id == other.id is not None


def test_a_gap_in_the_manifest_is_an_error(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", tmp_path / "manifest"
    _segment(root, "t", 0, 0)
    _segment(root, "t", 0, 1)
    manifest = Manifest(str(directory))
    manifest.discover([str(root)])
    _segment(root, "t", 0, 2)
    manifest.discover([str(root)])
    (directory / "0.json").unlink()
    with pytest.raises(SourceError, match=r"1.json follows -1.json"):
        Manifest(str(directory)).entries()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "unreadable"),
        (b'{"version": 2, "entries": []}', "version 2"),
        (b'{"version": 1, "manifest": "m"}', "unreadable"),
        (b'{"version": 1, "entries": []}', "unreadable"),
        (
            b'{"version": 1, "manifest": "m", "entries": [{"seq": 2, "topic": "t", '
            b'"partition": 0, "base_offset": 0, "path": "/x", "size": 1}]}',
            "seq 2 where 1 was expected",
        ),
    ],
)
def test_a_damaged_manifest_file_is_an_error(tmp_path: Path, content: bytes, message: str) -> None:
    _touch(tmp_path / "0.json", content)
    with pytest.raises(SourceError, match=message):
        Manifest(str(tmp_path)).entries()


def test_the_manifest_id_is_fixed_by_the_first_file(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", tmp_path / "manifest"
    _segment(root, "t", 0, 0)
    _segment(root, "t", 0, 1)
    manifest = Manifest(str(directory))
    assert manifest.id is None
    manifest.discover([str(root)])
    _segment(root, "t", 0, 2)
    manifest.discover([str(root)])
    ids = {json.loads((directory / f).read_text())["manifest"] for f in os.listdir(directory)}
    assert ids == {manifest.id}
    assert Manifest(str(directory)).entries() and Manifest(str(directory)).id is None
    reopened = Manifest(str(directory))
    reopened.refresh()
    assert reopened.id == manifest.id


def test_files_of_two_manifests_are_not_mixed(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    _segment(root, "t", 0, 0)
    _segment(root, "t", 0, 1)
    Manifest(str(tmp_path / "a")).discover([str(root)])
    _segment(root, "t", 0, 2)
    _segment(root, "u", 0, 0)
    _segment(root, "u", 0, 1)
    b = Manifest(str(tmp_path / "b"))
    b.discover([str(root)])
    _segment(root, "u", 0, 2)
    b.discover([str(root)])
    os.replace(tmp_path / "b" / "1.json", tmp_path / "a" / "1.json")
    with pytest.raises(SourceError, match="files of two manifests were mixed"):
        Manifest(str(tmp_path / "a")).entries()


def test_offsets_are_checked_against_the_manifest(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", str(tmp_path / "manifest")
    for base in (0, 1, 2):
        _segment(root, "t", 0, base)
    manifest = Manifest(directory)
    assert manifest.check(offset_of(0)) == 0  # a new query, before anything was found
    manifest.discover([str(root)])
    assert manifest.check(offset_of(2, manifest.id)) == 2
    assert Manifest(directory).check(offset_of(1, manifest.id)) == 1  # after a restart
    with pytest.raises(SourceError, match="checkpoint is at segment 3"):
        manifest.check(offset_of(3, manifest.id))
    with pytest.raises(SourceError, match="deleted, replaced or moved"):
        manifest.check(offset_of(1, "another"))

    # Deleted and rebuilt: the same segments, but the checkpoint counted in the old one.
    for f in os.listdir(directory):
        os.unlink(os.path.join(directory, f))
    rebuilt = Manifest(directory)
    rebuilt.discover([str(root)])
    assert rebuilt.latest_seq == 2
    with pytest.raises(SourceError, match="deleted, replaced or moved"):
        rebuilt.check(offset_of(2, manifest.id))


def test_asking_beyond_the_manifest_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="has 0 segments, but seq 3 was asked for"):
        Manifest(str(tmp_path / "manifest")).between(0, 3)


def test_a_pickled_manifest_leaves_its_cache_behind(tmp_path: Path) -> None:
    root, directory = tmp_path / "logs", str(tmp_path / "manifest")
    _segment(root, "t", 0, 0)
    _segment(root, "t", 0, 1)
    manifest = Manifest(directory)
    manifest.discover([str(root)])
    copy = pickle.loads(pickle.dumps(manifest))
    assert copy.latest_seq == 0
    assert copy.entries() == manifest.entries()


@pytest.mark.parametrize("offset", [{}, {"seq": -1}, {"seq": "3"}, {"seq": True}, None, [3]])
def test_offsets_are_checked(offset: object) -> None:
    with pytest.raises(SourceError, match="not a kafka-segments offset"):
        seq_of(offset)  # type: ignore[arg-type]


def test_offsets_round_trip() -> None:
    assert offset_of(0) == {"seq": 0}
    assert offset_of(7, "abc") == {"seq": 7, "manifest": "abc"}
    offset = json.loads(json.dumps(offset_of(7, "abc")))
    assert (seq_of(offset), manifest_id_of(offset)) == (7, "abc")
    assert manifest_id_of(offset_of(0)) is None


@given(st.lists(st.integers(0, 40), min_size=0, max_size=12))
def test_partitions_take_turns_in_the_manifest(backlogs: list[int]) -> None:
    """Partition ``p`` has ``backlogs[p]`` new segments: every prefix of the order (what a
    micro-batch bounded by a segment count takes) holds as many of each partition as it has,
    up to one more than any other; each partition's own order is kept."""
    found = [
        SegmentFile("t", p, base, f"/in/t-{p}/{base:020d}.log", 10)
        for p, n in enumerate(backlogs)
        for base in range(n)
    ]
    order = by_turns(found)
    assert sorted(order, key=lambda s: s.sort_key) == found
    taken = [0] * len(backlogs)
    for s in order:
        assert s.base_offset == taken[s.partition]  # the partition's next, in order
        taken[s.partition] += 1
        waiting = [t for p, t in enumerate(taken) if t < backlogs[p]]
        assert all(taken[s.partition] <= t + 1 for t in waiting)


def test_a_manifest_appends_new_segments_a_partition_at_a_time(tmp_path: Path) -> None:
    root = tmp_path / "in"
    for name, bases in (("big-0", range(5)), ("small-0", [0]), ("small-1", [0, 7])):
        (root / name).mkdir(parents=True)
        for base in bases:
            (root / name / f"{base:020d}.log").write_bytes(b"x")
    manifest = Manifest(str(tmp_path / "manifest"), Storage())
    added = manifest.discover([str(root)], rolled_only=False)
    assert [(e.file.topic, e.file.partition, e.file.base_offset) for e in added[:5]] == [
        ("big", 0, 0),
        ("small", 0, 0),
        ("small", 1, 0),
        ("big", 0, 1),
        ("small", 1, 7),
    ]
    assert [e.seq for e in added] == list(range(1, 9))
