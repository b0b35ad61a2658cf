"""Kafka's partition directory names: one function decides, for discovery, the output and the
config, and every name it refuses says why."""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from segcompact.format.logdir import (
    MAX_OFFSET,
    MAX_PARTITION,
    MAX_TOPIC_LENGTH,
    is_topic_name,
    parse_partition_dir,
    parse_segment_file,
    why_not_partition_dir,
)
from segcompact.format.writer import segment_name
from segcompact.humanize import printable_path

LEGAL = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
topics = st.text(alphabet=LEGAL, min_size=1, max_size=MAX_TOPIC_LENGTH).filter(
    lambda t: t not in (".", "..", "__cluster_metadata")
)
partitions = st.integers(0, MAX_PARTITION)


def _fits(topic: str, partition: int) -> bool:
    return len(f"{topic}-{partition}") <= 255  # what a file system holds, and Kafka writes


@given(topics, partitions)
@example("a" * MAX_TOPIC_LENGTH, 99_999)
@example("a-1", 0)
@example("...", 7)
@example("-", 1)
def test_every_name_kafka_writes_is_read_back(topic: str, partition: int) -> None:
    name = f"{topic}-{partition}"
    if not _fits(topic, partition):
        assert parse_partition_dir(name) is None
        assert "longer than a file name" in (why_not_partition_dir(name) or "")
        return
    assert parse_partition_dir(name) == (topic, partition)
    assert why_not_partition_dir(name) is None
    assert is_topic_name(topic)


@given(topics, partitions, st.sampled_from(["\n", "\r\n", " ", "\t", "\x00", "/", "é", "\u0661"]))
def test_a_character_kafka_never_writes_is_refused_wherever_it_is(
    topic: str, partition: int, odd: str
) -> None:
    name = f"{topic}-{partition}"
    for spoilt in (
        name + odd,
        odd + name,
        f"{topic}{odd}-{partition}",
        f"{topic}-{odd}{partition}",
    ):
        assert parse_partition_dir(spoilt) is None, repr(spoilt)
        assert f"character {odd[0]!r} is not allowed" in (why_not_partition_dir(spoilt) or "")
    assert not is_topic_name(topic + odd)


@given(topics, partitions, st.integers(1, 3))
def test_a_partition_with_leading_zeros_is_not_kafkas(
    topic: str, partition: int, zeros: int
) -> None:
    name = f"{topic}-{'0' * zeros}{partition}"
    assert parse_partition_dir(name) is None
    assert "leading zero" in (why_not_partition_dir(name) or "")


@given(st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b))
def test_a_name_of_any_bytes_is_read_or_refused_never_an_error(raw: bytes) -> None:
    name = os.fsdecode(raw)  # as os.listdir gives it: undecodable bytes as lone surrogates
    parsed, why = parse_partition_dir(name), why_not_partition_dir(name)
    assert (parsed is None) != (why is None)
    if parsed is not None:
        assert f"{parsed[0]}-{parsed[1]}".encode() == raw  # only the exact name Kafka writes
    printable_path(name).encode("utf-8")  # and it can be shown


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", ("orders", 0)),
        ("my-topic-12", ("my-topic", 12)),
        ("__consumer_offsets-49", ("__consumer_offsets", 49)),
        ("a.b_c-2147483647", ("a.b_c", 2147483647)),
        ("...-0", ("...", 0)),
        ("orders-1a", None),
        ("orders-\u0661", None),  # a non-ASCII digit
    ],
)
def test_partition_directory_names(name: str, expected: tuple[str, int] | None) -> None:
    assert parse_partition_dir(name) == expected


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("good-0\n", "character '\\n' is not allowed"),
        (os.fsdecode(b"\xff-0"), "not valid UTF-8"),
        (os.fsdecode(b"caf\xc3\xa9-0"), "character 'é' is not allowed"),
        ("lz-0007", "partition 0007 has a leading zero (Kafka writes 7)"),
        ("orders-00", "partition 00 has a leading zero"),
        ("orders-2147483648", "beyond 2147483647"),
        ("orders", "does not end in -<partition number>"),
        ("orders-", "does not end in -<partition number>"),
        ("orders-x", "does not end in -<partition number>"),
        ("-0", "no topic before -<partition>"),
        ("a" * 250 + "-0", "topic of 250 characters, more than 249"),
        ("a" * 249 + "-100000", "256 bytes, longer than a file name Kafka writes (255)"),
        (".-0", ". is not a topic name"),
        ("..-3", ".. is not a topic name"),
        ("__cluster_metadata-0", "KRaft's metadata log"),
        ("orders-0.6f9b2e1c4d8a4f7e9c3b2a1d0e9f8c7b-delete", "a partition Kafka is deleting"),
        ("orders-0.6f9b2e1c4d8a4f7e9c3b2a1d0e9f8c7b-future", "moving to another log dir"),
        ("orders-0.6f9b2e1c4d8a4f7e9c3b2a1d0e9f8c7b-stray", "stray partition"),
    ],
)
def test_each_name_kafka_would_not_write_says_why(name: str, why: str) -> None:
    assert parse_partition_dir(name) is None
    assert why in (why_not_partition_dir(name) or ""), why_not_partition_dir(name)


@pytest.mark.parametrize(
    ("topic", "legal"),
    [
        ("orders", True),
        ("a" * 249, True),
        ("a" * 250, False),
        ("", False),
        (".", False),
        ("..", False),
        ("...", True),
        ("orders\n", False),  # `$` would match before the newline
        ("or ders", False),
        ("ordérs", False),
    ],
)
def test_topic_names(topic: str, legal: bool) -> None:
    assert is_topic_name(topic) is legal


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/logs/orders-0", "/logs/orders-0"),
        ("/logs/good-0\n", "b'/logs/good-0\\n'"),
        (os.fsdecode(b"/logs/\xff-0"), "b'/logs/\\xff-0'"),
        ("/logs/caf\u00e9-0", "/logs/caf\u00e9-0"),
        ("/logs/\ud800", "'/logs/\\ud800'"),  # a surrogate no undecodable byte makes
    ],
)
def test_a_path_is_shown_on_one_printable_line(path: str, shown: str) -> None:
    assert printable_path(path) == shown


# --- segment files ---------------------------------------------------------------------------

SUFFIXES = [".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".log.cleaned", ".log.swap"]


@given(st.integers(0, MAX_OFFSET), st.sampled_from(SUFFIXES))
@example(0, ".log")
@example(MAX_OFFSET, ".log")
def test_every_segment_file_name_the_writer_gives_is_read_back(base: int, suffix: str) -> None:
    name = segment_name(base, suffix)
    assert parse_segment_file(name) == (base, suffix)
    assert parse_segment_file(f"s3a://bucket/logs/orders-0/{name}") == (base, suffix)


@given(st.text(max_size=30))
@example("00000000000000001234.log\n")
@example("\u0661" * 20 + ".log")  # digits, not ASCII ones
def test_any_other_name_is_refused_never_an_error(name: str) -> None:
    parsed = parse_segment_file(name)
    assert parsed is None or segment_name(*parsed) == name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("00000000000000001234.log", (1234, ".log")),
        ("/logs/orders-0/00000000000000001234.timeindex", (1234, ".timeindex")),
        ("09223372036854775807.log", (MAX_OFFSET, ".log")),
        ("09223372036854775808.log", None),  # beyond a long
        ("1234.log", None),  # not 20 digits
        ("000000000000000001234.log", None),  # 21 digits
        ("0000000000000000123a.log", None),
        ("00000000000000001234", None),  # no suffix
        ("00000000000000001234.log\n", None),
        ("leader-epoch-checkpoint", None),
        ("partition.metadata", None),
    ],
)
def test_segment_file_names(name: str, expected: tuple[int, str] | None) -> None:
    assert parse_segment_file(name) == expected
