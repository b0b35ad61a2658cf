"""Publication on a local disk: versions written aside, published by an exclusive manifest (and
a symlink), read back by the manifest, superseded ones removed, exported as a Kafka log dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segcompact.errors import SegcompactError, UsageError
from segcompact.export import export
from segcompact.publication import PUBLISHED, VERSIONS, Output, Publication, new_version_directory
from segcompact.storage import Storage


def _version(
    output: Output, version: int, data: bytes, topic: str = "t", partition: int = 0
) -> Publication:
    directory = new_version_directory(topic, partition, version)
    target = output.version_directory(directory)
    for name in ("00000000000000000000.log", "00000000000000000000.index"):
        stream = target.create(name)
        stream.write(data)
        stream.close()
    return Publication(topic, partition, version, directory, tuple(target.files))


def test_publish_follow_and_remove_superseded(tmp_path: Path) -> None:
    output = Output(str(tmp_path / "out"), Storage())
    assert output.latest("t", 0) is None and output.partitions() == []
    first = _version(output, 1, b"one")
    output.publish(first)
    second = _version(output, 2, b"two")
    assert output.latest("t", 0) == first, "written aside: not published yet"
    output.publish(second)
    assert output.latest("t", 0) == second
    assert output.partitions() == [("t", 0)]
    # The symlink a broker serves follows the publication.
    link = tmp_path / "out" / "t-0"
    assert (link / "00000000000000000000.log").read_bytes() == b"two"
    assert os.path.realpath(link) == str(tmp_path / "out" / second.directory)
    assert [f.size for f in second.files] == [3, 3]
    # A killed attempt's files (never published) and the superseded version go; the manifest
    # of version 1 too.
    leftover = _version(output, 3, b"killed")
    assert output.remove_superseded("t", 0) == []
    assert os.listdir(tmp_path / "out" / VERSIONS / "t-0") == [second.directory.split("/")[-1]]
    assert os.listdir(tmp_path / "out" / PUBLISHED / "t-0") == [f"{2:020d}.json"]
    assert not (tmp_path / "out" / leftover.directory).exists()


def test_published_versions_from_one_listing_agree_with_each_latest(tmp_path: Path) -> None:
    output = Output(str(tmp_path / "out"), Storage())
    assert output.published_versions() == {}
    expected = {("t", 0): 3, ("t", 1): 1, ("u.v-w", 12): 2, ("t-1", 0): 1}
    for (topic, partition), last in expected.items():
        for version in range(1, last + 1):
            output.publish(_version(output, version, b"v", topic, partition))
    # A manifest a crashed attempt left beside the newest, and files that are not manifests.
    stale = tmp_path / "out" / PUBLISHED / "t-0" / f"{2:020d}.json"
    stale.write_bytes((tmp_path / "out" / PUBLISHED / "t-0" / f"{3:020d}.json").read_bytes())
    (tmp_path / "out" / PUBLISHED / "t-0" / "notes.txt").write_text("x")
    (tmp_path / "out" / PUBLISHED / "not a partition").mkdir()
    (tmp_path / "out" / PUBLISHED / "not a partition" / f"{9:020d}.json").write_text("{}")
    assert output.published_versions() == expected
    for (topic, partition), version in expected.items():
        latest = output.latest(topic, partition)
        assert latest is not None and latest.version == version


@pytest.mark.parametrize(
    ("topic", "partition"),
    [("a" * 249, 99_999), ("a.b_c-d" * 34, 2147483647), ("-", 0)],  # 255 bytes, and others
)
def test_every_partition_name_kafka_writes_is_published_and_exported(
    tmp_path: Path, topic: str, partition: int
) -> None:
    name = f"{topic}-{partition}"
    assert len(name) <= 255
    output = Output(str(tmp_path / "out"), Storage())
    for version in (1, 2):  # the second replaces the link the first made
        output.publish(_version(output, version, b"v%d" % version, topic, partition))
    assert output.partitions() == [(topic, partition)]
    assert (tmp_path / "out" / name / "00000000000000000000.log").read_bytes() == b"v2"
    assert sorted(os.listdir(tmp_path / "out")) == sorted([PUBLISHED, VERSIONS, name])
    (done,) = export(output, str(tmp_path / "to"), Storage())
    assert (tmp_path / "to" / name / "00000000000000000000.log").read_bytes() == b"v2"
    assert (done.topic, done.partition, done.version) == (topic, partition, 2)


def test_a_second_writer_of_a_version_is_refused(tmp_path: Path) -> None:
    output = Output(str(tmp_path / "out"), Storage())
    mine, theirs = _version(output, 1, b"mine"), _version(output, 1, b"theirs")
    assert mine.directory != theirs.directory, "each attempt writes files of its own"
    output.publish(mine)
    with pytest.raises(SegcompactError, match="version 1 of t-0 was published by another writer"):
        output.publish(theirs)
    assert output.latest("t", 0) == mine
    assert (tmp_path / "out" / "t-0" / "00000000000000000000.log").read_bytes() == b"mine"


def test_export_copies_checks_and_never_overwrites(tmp_path: Path) -> None:
    output = Output(str(tmp_path / "out"), Storage())
    output.publish(_version(output, 1, b"one"))
    (done,) = export(output, str(tmp_path / "x"), Storage(), topic="t")
    assert (done.topic, done.partition, done.version, done.files, done.bytes) == ("t", 0, 1, 2, 6)
    assert (tmp_path / "x" / "t-0" / "00000000000000000000.log").read_bytes() == b"one"
    with pytest.raises(UsageError, match="already exists"):
        export(output, str(tmp_path / "x"), Storage())
    assert export(output, str(tmp_path / "y"), Storage(), topic="other") == []
    # A file that no longer matches its manifest is not copied out as if it were fine.
    (tmp_path / "out" / "t-0" / "00000000000000000000.log").write_bytes(b"ONE")
    with pytest.raises(SegcompactError, match="its publication manifest says"):
        export(output, str(tmp_path / "z"), Storage())
