"""The source data the merge has not read: what ``sla``, ``health``, ``verify-erasure`` and the
job's metrics hold against the deletion SLA (:mod:`segcompact.erasure.unread` judges it).

Read without Spark: discovery lists every segment under the source roots, the active one
too (a tombstone in it is not erased before Kafka rolls it); the source's manifest and the
query's commit log say which of them a finished micro-batch read; the partitions table's
uncleanable reasons name the segment whose damage stopped a partition, whose rest was not read.
An unread segment's append time is its first batch's timestamp (the header only, its checksum
unchecked) or the file's modification time, the earlier: a producer clock ahead buys no time,
and a file whose batches cannot be read still has an age.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from segcompact.backlog import QueryLog, manifest_dir, query_dir
from segcompact.compaction.output import OUTPUT_NOT_WRITTEN
from segcompact.config import CompactorConfig
from segcompact.config.sla import smallest_sla_ms
from segcompact.delta.sql import NoTable, TableSql
from segcompact.discovery import SegmentFile, discover
from segcompact.erasure.unread import ANY_PARTITION, ANY_TOPIC, Unread, UnreadPartition, judge
from segcompact.errors import SegcompactError
from segcompact.format.segment import FIRST_BATCH_HEAD, first_append_ms
from segcompact.manifest import Manifest
from segcompact.storage import Storage

log = logging.getLogger(__name__)

Wanted = Callable[[str, int], bool]


def unmerged(config: CompactorConfig, sql: TableSql, wanted: Wanted | None = None) -> list[Unread]:
    """Every source segment (or damaged segment's rest) of the partitions ``wanted`` picks
    (default: those of topics with ``gdpr.deletion.sla.ms``) that the merge has not read, and
    every source root that cannot be listed (of :data:`ANY_TOPIC`: it may hold any partition).
    ``sql`` has the view ``partitions`` (the partitions table)."""
    want = wanted or (lambda topic, _: config.sla_ms(topic) is not None)
    storage = config.storage
    out: list[Unread] = []

    def unlisted(topic: str, partition: int, path: str, e: OSError) -> None:
        if want(topic, partition):
            since = _modified(storage, path)
            out.append(Unread(topic, partition, path, since, f"cannot be listed ({e})", True))

    listed = []
    for root in config.source.paths:
        try:
            listed += discover([root], rolled_only=False, storage=storage, unlisted=unlisted)
        except (OSError, SegcompactError) as e:  # gone, or not listable: any partition's data
            why = f"the source root cannot be listed ({e})"
            out.append(Unread(ANY_TOPIC, ANY_PARTITION, root, _modified(storage, root), why, True))
    segments = [
        s
        for s in listed
        if want(s.topic, s.partition) and s.size > 0  # an empty segment holds nothing
    ]
    read, why_unread = _read_segments(config)
    damaged = _damaged(sql)
    for s in segments:
        reason = damaged.get((s.topic, s.partition))
        if reason is not None and reason.startswith(f"{s.path}: "):
            why = f"past the damage of an uncleanable partition: {reason}"
            out.append(_unread(storage, s, why, partial=True))
        elif s.path not in read:
            out.append(_unread(storage, s, why_unread))
    found = {s.path for s in segments}
    for (topic, partition), reason in sorted(damaged.items()):
        # A damaged segment gone from the source (deleted, or never listed): its rest is unread
        # and has no age left to read.
        if want(topic, partition) and not any(reason.startswith(f"{p}: ") for p in found):
            where = f"{topic}-{partition}"
            out.append(Unread(topic, partition, where, None, f"uncleanable: {reason}", True))
    return out


def judged(config: CompactorConfig, sql: TableSql, now_ms: int) -> list[UnreadPartition]:
    """:func:`unmerged` data of the topics with an SLA, judged (``erasure.unread.judge``);
    what cannot be tied to a topic (a source root not listed) by the smallest SLA."""

    def sla_of(topic: str) -> int | None:
        return smallest_sla_ms(config) if topic == ANY_TOPIC else config.sla_ms(topic)

    return judge(unmerged(config, sql), sla_of, now_ms)


def cleared(config: CompactorConfig, read_whole: Iterable[str], holding: Iterable[str]) -> set[str]:
    """The source segments a key's scan read to their end (``read_whole``) and found no record
    of it in (not in ``holding``), named as :func:`unmerged` names them (absolute)."""
    return {_absolute(config.storage, p) for p in read_whole} - {
        _absolute(config.storage, p) for p in holding
    }


def _absolute(storage: Storage, path: str) -> str:
    fs, at = storage.resolve(path)
    return fs.abspath(at)


def _read_segments(config: CompactorConfig) -> tuple[set[str], str]:
    """The paths of the segments a finished micro-batch read, and why the others count as
    unread: not read yet, or (when the checkpoint cannot be read) not known to be read."""
    storage = config.storage
    try:
        query = QueryLog(query_dir(config), storage)
        committed = query.last_commit()
        end = 0 if committed is None else query.end_seq(committed)
        read = Manifest(manifest_dir(config), storage).between(0, end)
    except (OSError, ValueError, IndexError, SegcompactError) as e:
        log.warning("the job's progress cannot be read, every segment counts as unread: %s", e)
        return set(), f"not known to be merged (the job's checkpoint cannot be read: {e})"
    return {e.file.path for e in read}, "not merged yet"


def _damaged(sql: TableSql) -> dict[tuple[str, int], str]:
    """The uncleanable partitions' reasons (which start with the damaged file's path), less
    those whose records were merged and only their output failed."""
    p = sql.quote("partition")
    try:
        rows = sql.query(
            f"SELECT topic, {p}, uncleanable_reason FROM partitions "
            "WHERE uncleanable_reason IS NOT NULL"
        ).to_pylist()
    except NoTable:
        return {}
    return {
        (r["topic"], r["partition"]): str(r["uncleanable_reason"])
        for r in rows
        if not str(r["uncleanable_reason"]).startswith(OUTPUT_NOT_WRITTEN)  # merged, not unread
    }


def _unread(storage: Storage, s: SegmentFile, why: str, *, partial: bool = False) -> Unread:
    return Unread(s.topic, s.partition, s.path, _since(storage, s.path), why, partial)


def _since(storage: Storage, path: str) -> int | None:
    """The earlier of the first batch's append time and the file's modification time."""
    times = [_first_batch(storage, path), _modified(storage, path)]
    known = [t for t in times if t is not None]
    return min(known, default=None)


def _first_batch(storage: Storage, path: str) -> int | None:
    fs, at = storage.resolve(path)
    try:
        stream = fs.input_file(at).open()
        try:
            head = stream.read(FIRST_BATCH_HEAD)
        finally:
            stream.close()
    except OSError:
        return None  # gone or unreadable: its modification time, if any, stands
    return first_append_ms(head)


def _modified(storage: Storage, path: str) -> int | None:
    fs, at = storage.resolve(path)
    try:
        return fs.modified_ms(at)
    except OSError:
        return None
