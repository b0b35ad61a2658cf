"""Kafka's names in a log dir: a topic's name, a partition's directory ``<topic>-<partition>``,
and a segment's files ``<base offset in 20 digits><suffix>`` (:func:`parse_segment_file`).

One function (:func:`_read`) decides whether a directory name is a partition as Kafka writes it;
:func:`parse_partition_dir` and :func:`why_not_partition_dir` are its two answers, and
:func:`is_topic_name` applies the same rule to a topic name alone. Kafka's rules
(``org.apache.kafka.common.internals.Topic``, ``UnifiedLog.parseTopicPartitionName``): a topic
is 1 to 249 characters from ``a-z A-Z 0-9 . _ -``, never ``.`` or ``..``; the partition is a
decimal int32 written without a sign or leading zeros. 249 leaves room for ``-<partition>`` in a
255-byte file name, so every name derived from a partition's (``<output>/<topic>-<partition>``,
``topic=<topic>`` in a Delta table) fits.
"""

from __future__ import annotations

import posixpath
import re

MAX_TOPIC_LENGTH = 249
MAX_NAME_BYTES = 255  # a file name on every local file system segcompact writes to
MAX_PARTITION = 0x7FFFFFFF
TOPIC_CHARACTERS = "a-z A-Z 0-9 . _ -"

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
_DIGITS = re.compile(r"[0-9]+")
_PARTITION = re.compile(r"0|[1-9][0-9]*")
# Directories Kafka itself leaves beside its partitions: ``<topic>-<partition>.<uuid>-<kind>``.
_KAFKA_LEFTOVER = re.compile(r".+\.[0-9a-fA-F]+-(?P<kind>delete|future|stray)")
_LEFTOVERS = {
    "delete": "a partition Kafka is deleting",
    "future": "a partition Kafka is moving to another log dir",
    "stray": "a stray partition Kafka set aside (KIP-858)",
}
# A segment's files, as ``LogFileUtils`` names them (``writer.segment_name`` writes them):
# ``.log``, ``.index``, ``.timeindex``, and the ``.log.cleaned`` and such of Kafka's cleaner.
_SEGMENT_FILE = re.compile(r"(?P<base>[0-9]{20})(?P<suffix>\.[a-z.]+)")
MAX_OFFSET = (1 << 63) - 1  # a long: the offsets Kafka writes
# KRaft's metadata log sits in a broker's log dir like a partition but is not a topic.
_INTERNAL_LOGS = frozenset({"__cluster_metadata"})


def is_topic_name(name: str) -> bool:
    """Whether ``name`` is a topic name Kafka allows."""
    return (
        len(name) <= MAX_TOPIC_LENGTH
        and _LEGAL.fullmatch(name) is not None
        and name not in (".", "..")
    )


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``("orders", 3)`` for ``orders-3``; None for a name that is not a partition directory."""
    read = _read(name)
    return read if isinstance(read, tuple) else None


def why_not_partition_dir(name: str) -> str | None:
    """Why ``name`` is not a partition directory as Kafka writes it; None when it is one."""
    read = _read(name)
    return read if isinstance(read, str) else None


def _read(name: str) -> tuple[str, int] | str:
    """``(topic, partition)`` of a partition directory's name, or why it is not one.

    ``name`` is as ``os.listdir`` gives it: bytes that are not UTF-8 arrive as lone surrogates.
    """
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "not valid UTF-8"
    if size > MAX_NAME_BYTES:
        return f"{size} bytes, longer than a file name Kafka writes ({MAX_NAME_BYTES})"
    leftover = _KAFKA_LEFTOVER.fullmatch(name)
    if leftover is not None:
        return _LEFTOVERS[leftover["kind"]]
    bad = next((c for c in name if _LEGAL.fullmatch(c) is None), None)
    if bad is not None:
        return f"character {bad!r} is not allowed (only {TOPIC_CHARACTERS})"
    topic, dash, partition = name.rpartition("-")
    if not dash or _DIGITS.fullmatch(partition) is None:
        return "does not end in -<partition number>"
    if _PARTITION.fullmatch(partition) is None:
        return f"partition {partition} has a leading zero (Kafka writes {int(partition)})"
    if int(partition) > MAX_PARTITION:
        return f"partition {partition} is beyond {MAX_PARTITION}"
    if not topic:
        return "no topic before -<partition>"
    if len(topic) > MAX_TOPIC_LENGTH:
        return f"topic of {len(topic)} characters, more than {MAX_TOPIC_LENGTH}"
    if topic in (".", ".."):
        return f"{topic} is not a topic name"
    if topic in _INTERNAL_LOGS:
        return "KRaft's metadata log, not a topic"
    return topic, int(partition)


def parse_segment_file(location: str) -> tuple[int, str] | None:
    """The base offset and suffix a segment file's name holds (``…/00000000000000000042.log`` →
    ``(42, ".log")``), from the last part of a path or URI; None for any other name: not 20
    digits, an offset beyond a long."""
    m = _SEGMENT_FILE.fullmatch(posixpath.basename(location))
    if m is None or int(m["base"]) > MAX_OFFSET:
        return None
    return int(m["base"]), m["suffix"]
