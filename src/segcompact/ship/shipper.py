"""The shipper's loop: each poll, every selected partition of every log dir, in parallel.

A partition is handled by one thread at a time, its segments in offset order
(:func:`segcompact.ship.rules.plan`); a failure to read or upload stops that partition until the
next poll and counts an error, the others go on. A damaged segment is recorded, reported in one
line, and passed (it will not heal: Kafka never appends to a rolled segment). The shipper holds
a lease per log dir (:mod:`segcompact.lease`) in ``<to>/.segcompact-ship/<log dir id>``: two
shippers of one log dir would both upload the same segments. A partition another log dir's
shipper claimed is left to it while that shipper's lease lives, and taken over once the lease
has been expired (or released) for longer than ``lease_timeout_ms``: the broker lost the
replica (a reassignment, a replaced broker), or is down for that long.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from segcompact.clock import Clock, SystemClock
from segcompact.config.ship import ShipConfig, ShipSettings
from segcompact.discovery import SHIPPER_DIR
from segcompact.errors import ConfigError, CorruptBatchError, SegcompactError
from segcompact.format.logdir import parse_partition_dir
from segcompact.format.writer import segment_name
from segcompact.humanize import duration
from segcompact.lease import Lease
from segcompact.ship import gaps
from segcompact.ship.broker import CHECKPOINT, log_dir_id, read_high_watermarks
from segcompact.ship.manifest import Entry, Owner, PartitionManifest
from segcompact.ship.metrics import ShipMetrics
from segcompact.ship.results import PartitionResult, PollResult
from segcompact.ship.rules import (
    Gap,
    Listing,
    Ship,
    TopicSelection,
    plan,
    went_back,
)
from segcompact.ship.upload import copy_segment, crc_of
from segcompact.storage import FileInfo, FileSystem, Storage

log = logging.getLogger(__name__)


def selection(settings: ShipSettings) -> TopicSelection:
    pattern = re.compile(settings.topics_regex) if settings.topics_regex is not None else None
    return TopicSelection(frozenset(settings.topics), pattern)


class Shipper:
    """Ships the rolled segments of a broker's log dirs to a source root."""

    def __init__(
        self,
        config: ShipConfig,
        *,
        clock: Clock | None = None,
        metrics: ShipMetrics | None = None,
    ) -> None:
        self.settings = config.ship
        self.storage = Storage.of(config.spark)
        self.clock = clock or SystemClock()
        self.metrics = metrics or ShipMetrics()
        self.topics = selection(config.ship)
        self.target_fs, self.target = self.storage.resolve(config.ship.to)
        self.target = self.target_fs.abspath(self.target)
        # What this process knows of the target, read once a partition: it is the only writer
        # of what it owns (the lease, owner.json), so a poll with nothing to ship reads nothing.
        self._owners: dict[str, Owner] = {}  # partition → the log dir that ships it
        self._alive_until: dict[str, int] = {}  # another log dir → no takeover before (ms)
        self._shipped_to: dict[str, int | None] = {}  # partition → where its manifest ends
        self._unchecked: set[str] = set()  # log dirs without a high-watermark checkpoint
        self._ids: dict[str, str] = {}  # log dir → its id, read once (it names the lease)
        self.stop = threading.Event()  # set: each partition stops after the segment in hand

    def check(self) -> None:
        """Raise :class:`ConfigError` for a log dir that is not there, or a target that
        cannot be reached with the settings given."""
        self.storage.check("[ship] to", self.settings.to)
        for log_dir in self.settings.log_dirs:
            fs, path = self.storage.resolve(log_dir)
            if not fs.exists(path):
                raise ConfigError(f"[ship] log_dirs: {log_dir} does not exist")

    def lease(self) -> Lease:
        """The lease of every log dir, kept in the target."""
        places = []
        for log_dir in self.settings.log_dirs:
            fs, path = self.storage.resolve(log_dir)
            name = self._log_dir_id(fs, fs.abspath(path))
            places.append(self.target_fs.join(self.target, SHIPPER_DIR, name))
        return Lease(
            places,
            self.storage,
            command="ship",
            timeout_ms=self.settings.lease_timeout_ms,
            clock=self.clock,
            tables=(),
        )

    def run(self, *, wait: Callable[[float], bool]) -> None:
        """Poll until :attr:`stop` is set; ``wait(seconds)`` sleeps between polls and returns
        True when woken to stop (``stop.wait``, or a test's own)."""
        while not self.stop.is_set():
            result = self.poll()
            if result.shipped or result.gaps or result.damaged or result.errors:
                log.info("%s", result.line())  # a quiet poll is not worth a line every 10 s
            if wait(self.settings.poll_interval_ms / 1000):
                return

    def poll(self) -> PollResult:
        """Look at every partition once, ship what has rolled, record gaps."""
        jobs: list[tuple[str, int, FileSystem, str, str, int | None]] = []
        total = PollResult()
        for log_dir in self.settings.log_dirs:
            fs, root = self.storage.resolve(log_dir)
            try:
                entries = fs.list_dir(fs.abspath(root))
            except OSError as e:
                log.error("%s: cannot be listed (%s)", log_dir, e.strerror or e)
                total.errors += 1
                total.unknown = True
                continue
            me = self._log_dir_id(fs, fs.abspath(root))
            try:
                committed = self._high_watermarks(fs, fs.abspath(root))
            except (OSError, ValueError) as e:
                log.error("%s: %s cannot be read (%s)", log_dir, CHECKPOINT, e)
                total.errors += 1
                total.unknown = True
                continue
            for entry in entries:
                parsed = parse_partition_dir(entry.name) if entry.is_dir else None
                if parsed is not None and parsed[0] in self.topics:
                    hw = None if committed is None else committed.get(parsed, 0)
                    jobs.append((parsed[0], parsed[1], fs, entry.path, me, hw))
        jobs.sort(key=lambda j: (j[0], j[1]))
        with ThreadPoolExecutor(self.settings.uploads, thread_name_prefix="ship") as pool:
            results = list(pool.map(lambda job: self.partition(*job), jobs))
        oldest: int | None = None
        waiting_bytes = waiting = 0
        for r in results:
            if r.elsewhere:
                total.elsewhere += 1
                continue
            total.partitions += 1
            total.shipped += r.shipped
            total.bytes += r.bytes
            total.gaps += len(r.gaps)
            total.damaged += len(r.damaged)
            total.errors += r.errors
            total.unknown = total.unknown or r.unknown
            for size, modified in r.waiting:
                waiting += 1
                waiting_bytes += size
                if modified is not None:
                    oldest = modified if oldest is None else min(oldest, modified)
        self.metrics.polls.inc()
        self.metrics.segments.inc(total.shipped)
        self.metrics.bytes.inc(total.bytes)
        self.metrics.gaps.inc(total.gaps)
        self.metrics.damaged.inc(total.damaged)
        self.metrics.errors.inc(total.errors)
        if total.unknown:
            self.metrics.lag(None, 0, 0, 0, 0)
        else:
            age = 0.0 if oldest is None else max(0, self.clock.now_ms() - oldest) / 1000
            self.metrics.lag(age, waiting_bytes, waiting, total.partitions, total.elsewhere)
        return total

    def _log_dir_id(self, fs: FileSystem, log_dir: str) -> str:
        if log_dir not in self._ids:
            self._ids[log_dir] = log_dir_id(fs, log_dir)
        return self._ids[log_dir]

    def _high_watermarks(self, fs: FileSystem, log_dir: str) -> dict[tuple[str, int], int] | None:
        """The log dir's checkpointed high watermarks; None, said once, where there is no
        checkpoint to wait for."""
        found = read_high_watermarks(fs, log_dir)
        if found is None and log_dir not in self._unchecked:
            self._unchecked.add(log_dir)
            log.warning(
                "%s: no %s (not a broker's log dir?): segments are shipped without waiting for "
                "their records to be committed",
                log_dir,
                CHECKPOINT,
            )
        return found

    def partition(
        self,
        topic: str,
        partition: int,
        fs: FileSystem,
        path: str,
        log_dir: str,
        committed: int | None,
    ) -> PartitionResult:
        """Ship one partition's rolled segments, in offset order, below ``committed`` (its
        high watermark, when known), if the log dir ``log_dir`` (its id) is the one that ships
        it."""
        result = PartitionResult()
        name = f"{topic}-{partition}"
        manifest = PartitionManifest(self.target_fs, self.target_fs.join(self.target, name))
        try:
            files = {f.name: f for f in fs.list_dir(path) if not f.is_dir}
        except FileNotFoundError:
            return result  # the partition was deleted or moved meanwhile
        except OSError as e:
            log.error("%s: cannot be listed (%s)", path, e.strerror or e)
            result.errors += 1
            result.unknown = True
            return result
        try:
            known = self._owners.get(name)
            owner = known or manifest.owner(log_dir)
            if owner.log_dir != log_dir and self._owner_gone(owner.log_dir):
                owner = self._take_over(manifest, name, owner, log_dir)
            self._owners[name] = owner
            if owner.log_dir != log_dir:
                result.elsewhere = True
                return result
            if name not in self._shipped_to:
                last = manifest.last()
                self._shipped_to[name] = None if last is None else last.end
        except (OSError, SegcompactError) as e:
            log.error("%s: cannot be read (%s)", manifest.dir, e)
            result.errors += 1
            result.unknown = True  # what was shipped, and so what waits, is not known
            return result
        listing = Listing.of(files)
        if went_back(listing, self._shipped_to[name]):
            log.error(
                "%s: its log now ends at segment %d, below offset %d already shipped (the topic "
                "was created again, or its log truncated); nothing is shipped until %s is moved "
                "away",
                path,
                listing.logs[-1],
                self._shipped_to[name],
                manifest.partition_dir,
            )
            result.errors += 1
            return result
        steps = plan(listing, self._shipped_to[name], committed)
        try:
            if steps and known is not None and not self._still_owner(manifest, name, log_dir):
                result.elsewhere = True
                return result
        except (OSError, SegcompactError) as e:
            log.error("%s: cannot be read (%s)", manifest.dir, e)
            result.errors += 1
            result.unknown = True
            return result
        for i, step in enumerate(steps):
            if self.stop.is_set():  # SIGTERM: the rest waits for the next start
                result.waiting = [self._waiting(fs, files, s) for s in steps[i:]]
                return result
            try:
                self._step(fs, files, manifest, name, step, result)
            except OSError as e:
                where = files[segment_name(step.start)].path if isinstance(step, Ship) else name
                log.error("%s: not shipped, tried again at the next poll (%s)", where, e)
                result.errors += 1
                result.waiting = [self._waiting(fs, files, s) for s in steps[i:]]
                return result
        return result

    def _owner_gone(self, owner: str) -> bool:
        """Whether the lease of log dir ``owner``'s shipper has been expired (or released) for
        longer than ``lease_timeout_ms``. Read at most once that long after its expiry: no
        takeover can be due before, so a poll over partitions shipped elsewhere mostly reads
        nothing. A log dir that never held a lease here is not taken from."""
        now = self.clock.now_ms()
        if now < self._alive_until.get(owner, 0):
            return False
        timeout = self.settings.lease_timeout_ms
        place = self.target_fs.join(self.target, SHIPPER_DIR, owner)
        lease = Lease([place], self.storage, command="ship", timeout_ms=timeout, clock=self.clock)
        (holder,) = lease.last_holders()
        if holder is None:
            self._alive_until[owner] = now + timeout
            return False
        self._alive_until[owner] = holder.expires_ms + timeout
        return now >= self._alive_until[owner]

    def _take_over(
        self, manifest: PartitionManifest, name: str, previous: Owner, log_dir: str
    ) -> Owner:
        """Make ``log_dir`` the owner of partition ``name`` after ``previous``, whose lease is
        gone; the owner another shipper made first if it got there before."""
        if not manifest.take_over(previous, log_dir):
            return manifest.current_owner()
        log.warning(
            "%s: taken over from log dir %s, whose shipper's lease has been gone for over %s; "
            "shipping goes on from where its manifest ends",
            name,
            previous.log_dir,
            duration(self.settings.lease_timeout_ms),
        )
        self._shipped_to.pop(name, None)  # read again: the manifest is the other's so far
        return Owner(log_dir, previous.generation + 1)

    def _still_owner(self, manifest: PartitionManifest, name: str, log_dir: str) -> bool:
        """Whether ``log_dir`` still owns partition ``name``, read again before anything of it
        is written: another shipper takes it over if this one stalled past its lease."""
        current = manifest.current_owner()
        if current.log_dir == log_dir:
            return True
        log.warning("%s: now shipped by log dir %s, which took it over", name, current.log_dir)
        self._owners[name] = current
        self._shipped_to.pop(name, None)
        return False

    def _step(
        self,
        fs: FileSystem,
        files: dict[str, FileInfo],
        manifest: PartitionManifest,
        name: str,
        step: Ship | Gap,
        result: PartitionResult,
    ) -> None:
        """Do one step of a partition's plan, and record it."""
        if isinstance(step, Gap):
            entry = Entry("gap", step.start, step.end, self.clock.now_ms())
            self._record(manifest, name, entry, f"{name}: gap, {entry.describe()}")
            result.gaps.append(entry)
        else:
            local = files[segment_name(step.start)]
            entry = self._ship(fs, local.path, manifest, step)
            if entry.kind == "shipped":
                self._record(manifest, name, entry, "")
                result.shipped += 1
                result.bytes += entry.size
            elif entry.kind == "gap":
                self._record(manifest, name, entry, f"{name}: gap, {entry.describe()}")
                result.gaps.append(entry)
            else:
                line = f"{name}: damaged, not shipped: {entry.reason}"
                self._record(manifest, name, entry, line)
                result.damaged.append(entry)

    def _waiting(
        self, fs: FileSystem, files: dict[str, FileInfo], step: Ship | Gap
    ) -> tuple[int, int | None]:
        if isinstance(step, Gap):
            return 0, None
        local = files[segment_name(step.start)]
        try:
            return local.size, fs.modified_ms(local.path)
        except OSError:
            return local.size, None

    def _ship(self, fs: FileSystem, local: str, manifest: PartitionManifest, step: Ship) -> Entry:
        now = self.clock.now_ms()
        target = self.target_fs.join(manifest.partition_dir, segment_name(step.start))
        try:
            copied = copy_segment(fs.input_file(local), self.target_fs, target)
        except FileNotFoundError as e:
            if e.filename not in (None, local) or fs.exists(local):
                raise
            return Entry("gap", step.start, step.end, now)  # deleted before it could be read
        except CorruptBatchError as e:
            return Entry("damaged", step.start, step.end, now, reason=str(e))
        if not copied.published:
            # An earlier run published it and stopped before its manifest entry: the same
            # bytes are there, or something else is, which is not the shipper's to replace.
            size, crc = crc_of(self.target_fs, target)
            if (size, crc) != (copied.size, copied.crc32c):
                raise OSError(f"{target} exists with other content ({size} bytes)")
        return Entry(
            "shipped",
            step.start,
            step.end,
            now,
            size=copied.size,
            crc32c=copied.crc32c,
            batches=copied.batches,
            last_offset=copied.last_offset,
        )

    def _record(self, manifest: PartitionManifest, name: str, entry: Entry, line: str) -> None:
        """Write ``entry`` to ``name``'s manifest (and a gap or damage to the root's list of
        what was not shipped), logging ``line``."""
        if line:
            log.warning("%s", line)
        manifest.add(entry)
        self._shipped_to[name] = entry.end
        if entry.kind != "shipped":
            gaps.record(self.target_fs, self.target, name, entry)
