"""Finding segment files under Kafka log-dir roots.

Discovery lists ``<root>/<topic>-<partition>/<20-digit base offset>.log`` files through the
storage seam (:class:`~segcompact.storage.Storage`): each root on its own file system. A
directory whose whole name is not a partition's as Kafka writes it
(:mod:`segcompact.format.logdir`) is skipped, never an error: :func:`skipped_directories` says
which and why. No Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from segcompact.errors import ConfigError
from segcompact.format.logdir import parse_partition_dir, parse_segment_file, why_not_partition_dir
from segcompact.storage import FileInfo, FileSystem, Storage

# segcompact's own folder in a source root: the shipper's leases and its list of what it could
# not ship (segcompact.ship). Not a partition, and not worth a "skipped" line either.
SHIPPER_DIR = ".segcompact-ship"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A directory in a source root that is not read, and why."""

    path: str
    reason: str


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
            if parsed is None and (why := _not_partition(entry)) is not None:
                _skipping(entry, why)
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
                SegmentFile(topic, partition, named[0], f.path, f.size)
                for f in files
                if not f.is_dir
                and (named := parse_segment_file(f.name)) is not None
                and named[1] == ".log"
                and _inside(fs, f.path, root)
            ]
            if rolled_only and segments:
                active = max(segments, key=lambda s: s.base_offset)
                segments = [s for s in segments if s is not active]
            found.extend(segments)
    found.sort(key=lambda s: s.sort_key)
    return found


def by_turns(segments: Iterable[SegmentFile]) -> list[SegmentFile]:
    """``segments`` taken a partition at a time in turn: the first of every partition,
    then the second of each, and so on; each partition's own order kept.

    The order the manifest appends new segments in, so that a micro-batch bounded by
    ``max_segments_per_batch`` takes from every partition with new segments: a partition with a
    backlog of 100,000 segments does not hold the others back for a thousand batches.
    """
    queues: dict[tuple[str, int], list[SegmentFile]] = {}
    for s in segments:
        queues.setdefault((s.topic, s.partition), []).append(s)
    depth = max((len(q) for q in queues.values()), default=0)
    return [q[i] for i in range(depth) for q in queues.values() if i < len(q)]


def skipped_directories(roots: Iterable[str], storage: Storage) -> list[Skipped]:
    """The directories under ``roots`` that discovery skips, and a root it cannot list, each
    with why: what ``status`` names."""
    skipped = []
    for root in roots:
        fs, path = storage.resolve(root)
        path = fs.abspath(path)
        try:
            entries = fs.list_dir(path)
        except FileNotFoundError:
            skipped.append(Skipped(path, "source root does not exist"))
            continue
        except OSError as e:
            skipped.append(Skipped(path, f"source root cannot be listed: {e.strerror or e}"))
            continue
        for entry in entries:
            if (why := _not_partition(entry)) is not None:
                skipped.append(Skipped(entry.path, f"not a partition directory: {why}"))
    return sorted(skipped, key=lambda s: s.path)


_skipped: set[str] = set()  # directories skipped, each logged once per process


def _not_partition(entry: FileInfo) -> str | None:
    """Why a directory in a source root is not a partition directory, and so is skipped; None
    for a partition directory, a file, or the shipper's own directory."""
    if not entry.is_dir or entry.name == SHIPPER_DIR:
        return None
    return why_not_partition_dir(entry.name)


def _skipping(entry: FileInfo, why: str) -> None:
    if entry.path not in _skipped:
        _skipped.add(entry.path)
        log.info("%a: not a partition directory (%s), skipped", entry.path, why)


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
