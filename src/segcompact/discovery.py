"""Finding segment files under Kafka log-dir roots.

Discovery lists ``<root>/<topic>-<partition>/<20-digit base offset>.log`` files through the
storage seam (:class:`~segcompact.storage.Storage`): each root on its own file system. No Spark.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from segcompact.errors import ConfigError
from segcompact.storage import FileInfo, FileSystem, Storage

# ``<topic>-<partition>``: the partition is the digits after the last '-'. Directories Kafka
# leaves behind (``t-0.<uuid>-delete``, ``-future``, ``-stray``) end in letters and are skipped.
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>[0-9]+)$")
_SEGMENT_FILE = re.compile(r"^(?P<base>[0-9]{20})\.log$")
_MAX_PARTITION = 0x7FFFFFFF

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """A segment file found by discovery: the partition it belongs to, its base offset (from its
    name), where it is and its size when listed."""

    topic: str
    partition: int
    base_offset: int
    path: str
    size: int

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.topic, self.partition, self.base_offset, self.path)


# KRaft's metadata log sits in a broker's log dir like a partition but is not a topic.
_INTERNAL_LOGS = frozenset({"__cluster_metadata"})


def check_roots(roots: Iterable[str], storage: Storage) -> None:
    """Raise :class:`ConfigError` naming the first of ``roots`` that does not exist."""
    for root in roots:
        _existing(root, storage)


def _existing(root: str, storage: Storage) -> tuple[FileSystem, str]:
    fs, path = storage.resolve(root)
    path = fs.abspath(path)
    if not fs.exists(path):
        raise ConfigError(f"source root {path} does not exist")
    return fs, path


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``("orders", 3)`` for ``orders-3``; None for a name that is not a partition directory."""
    m = _PARTITION_DIR.match(name)
    if m is None:
        return None
    partition = int(m["partition"])
    if partition > _MAX_PARTITION or m["topic"] in _INTERNAL_LOGS:
        return None
    return m["topic"], partition


def source_topics(roots: Iterable[str], storage: Storage) -> set[str]:
    """The topics with a partition directory under ``roots`` (a root that does not exist has
    none): the topics the source knows."""
    topics = set()
    for root in roots:
        fs, path = storage.resolve(root)
        for entry in _list_or_empty(fs, fs.abspath(path)):
            parsed = parse_partition_dir(entry.name) if entry.is_dir else None
            if parsed is not None:
                topics.add(parsed[0])
    return topics


def parse_segment_name(name: str) -> int | None:
    """The base offset of ``<20 digits>.log``; None for any other file name."""
    m = _SEGMENT_FILE.match(name)
    return int(m["base"]) if m else None


def discover(
    roots: Iterable[str],
    *,
    rolled_only: bool = True,
    storage: Storage | None = None,
    unlisted: Callable[[str, int, str, OSError], None] | None = None,
) -> list[SegmentFile]:
    """Every eligible segment under ``roots``, sorted by topic, partition, base offset, path.

    With ``rolled_only`` the segment with the highest base offset in each partition directory is
    the active one (still being appended to) and is left out until a newer one appears.
    A root that does not exist raises :class:`ConfigError` (:func:`check_roots`). A partition
    directory that cannot be listed raises, or goes to ``unlisted(topic, partition, path,
    error)`` and is skipped.
    """
    found: list[SegmentFile] = []
    storage = storage or Storage()
    for root in roots:
        fs, root = _existing(root, storage)
        for entry in fs.list_dir(root):
            parsed = parse_partition_dir(entry.name) if entry.is_dir else None
            if parsed is None or not _inside(fs, entry.path, root):
                continue
            topic, partition = parsed
            try:
                files = _list_or_empty(fs, entry.path)
            except OSError as e:
                if unlisted is None:
                    raise
                unlisted(topic, partition, entry.path, e)
                continue
            segments = [
                SegmentFile(topic, partition, base, f.path, f.size)
                for f in files
                if not f.is_dir
                and (base := parse_segment_name(f.name)) is not None
                and _inside(fs, f.path, root)
            ]
            if rolled_only and segments:
                active = max(segments, key=lambda s: s.base_offset)
                segments = [s for s in segments if s is not active]
            found.extend(segments)
    found.sort(key=lambda s: s.sort_key)
    return found


_left_out: set[str] = set()  # symlinks out of a root, each logged once per process


def _inside(fs: FileSystem, path: str, root: str) -> bool:
    """Whether ``path`` lies under ``root`` once its symlinks are followed: a link out of a
    source root is never followed (it might reach anything on the machine)."""
    if fs.inside(path, root):
        return True
    if path not in _left_out:
        _left_out.add(path)
        log.warning("%s: a symlink out of the source root %s, left alone", path, root)
    return False


def _list_or_empty(fs: FileSystem, path: str) -> list[FileInfo]:
    try:
        return fs.list_dir(path)
    except FileNotFoundError:
        return []  # partition deleted while listing
