"""One job at a time: a lease on every location a job writes.

Two jobs writing one state table, checkpoint or output would each commit what the other then
overwrites or misses. Every command that writes takes a lease on each location it owns, before
Spark starts, and a second job is refused in one line naming the holder.

A location's lease is a folder of ``<epoch:020d>.json`` files: ``<location>/.segcompact-lease/``
inside a folder segcompact owns whole (the checkpoint, the output), ``<table>.segcompact-lease/``
beside a Delta table (whose folder must hold Delta's files alone: Delta refuses to create a table
in a folder that has anything else). Each epoch is created exclusively (a conditional PUT on an
object store, a hard link on a local disk): the highest epoch is the lease, and no two jobs can
both create the same one. The holder renews every third of ``lease_timeout_ms`` by
creating the next epoch; a renewal that finds the next epoch taken has lost the lease (another
job took over one it saw expire while this one stalled) and the job stops. A lease is stale once
its expiry has passed, or at once when its holder ran on this host and its process is gone (a
kill -9, then a restart; or a container restarted under the same host name whose command has
the same pid again). A clean exit writes a released epoch. Expiry compares the holder's
clock with the taker's: hosts sharing a store need roughly synchronised clocks, as Kafka's
session timeouts do.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from segcompact.clock import Clock, SystemClock
from segcompact.config.locations import is_table_name
from segcompact.errors import SegcompactError
from segcompact.humanize import duration, iso_time
from segcompact.storage import FileSystem, Storage

if TYPE_CHECKING:
    from segcompact.config import CompactorConfig

LEASE_DIR = ".segcompact-lease"  # inside a folder; beside a table: <table>.segcompact-lease
_EPOCH = re.compile(r"^(?P<epoch>[0-9]{20})\.json$")

log = logging.getLogger(__name__)


def job_lease(config: CompactorConfig, command: str, clock: Clock | None = None) -> Lease:
    """The lease of every location ``config`` writes that the Python side opens (a catalog
    table's files are the catalog's; Spark alone opens ``hdfs://`` and the like)."""
    storage = config.storage
    places = [loc for loc in config.owned() if not is_table_name(loc) and storage.opens(loc)]
    return Lease(
        places,
        storage,
        command=command,
        timeout_ms=config.stream.lease_timeout_ms,
        clock=clock,
        tables=config.state.tables(),
    )


class LeaseHeld(SegcompactError):
    """Raised when another live job holds a location's lease."""


class LeaseLost(SegcompactError):
    """Raised when another job took a lease this job held (it stalled past the timeout)."""


@dataclass(frozen=True, slots=True)
class Holder:
    """What an epoch file says: who holds the lease, and until when."""

    owner: str  # one per Lease object: a process may run two commands, one after the other
    host: str
    pid: int
    command: str
    expires_ms: int
    released: bool = False

    def live(self, now_ms: int, host: str) -> bool:
        if self.released or self.expires_ms <= now_ms:
            return False
        if self.host != host:
            return True  # its process cannot be looked at from here: the expiry decides
        if self.pid == os.getpid():
            # This process, or an earlier one that had its pid (a container restarted with
            # the same host name, its command again pid 1): only the leases held here count.
            return self.owner in _HELD_HERE
        return _process_exists(self.pid)

    def describe(self) -> str:
        until = iso_time(self.expires_ms)
        return f"`segcompact {self.command}` on {self.host} (pid {self.pid}), lease until {until}"


_HELD_HERE: set[str] = set()  # the owners of the leases this process holds


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


class _Place:
    """The lease of one location: its folder and the epoch this job last wrote there."""

    def __init__(self, location: str, storage: Storage, *, table: bool) -> None:
        self.location = location
        self.fs: FileSystem
        self.fs, path = storage.resolve(location)
        self.dir = path.rstrip("/") + LEASE_DIR if table else self.fs.join(path, LEASE_DIR)
        self.epoch = -1

    def epochs(self) -> list[int]:
        try:
            entries = self.fs.list_dir(self.dir)
        except FileNotFoundError:
            return []
        return sorted(int(m["epoch"]) for e in entries if (m := _EPOCH.match(e.name)))

    def path(self, epoch: int) -> str:
        return self.fs.join(self.dir, f"{epoch:020d}.json")

    def read(self, epoch: int) -> Holder:
        path = self.path(epoch)
        try:
            return Holder(**json.loads(self.fs.read_bytes(path)))
        except (ValueError, TypeError) as e:
            raise SegcompactError(
                f"lease file {path} is unreadable ({e}); remove it if no job uses {self.location}"
            ) from None

    def write(self, epoch: int, holder: Holder) -> bool:
        return self.fs.create_exclusive(self.path(epoch), json.dumps(asdict(holder)).encode())

    def drop_below(self, epoch: int, seen: Iterable[int]) -> None:
        for old in seen:
            if old < epoch:
                self.fs.remove(self.path(old))


class Lease:
    """The leases of one job's locations, taken together or not at all."""

    def __init__(
        self,
        locations: Iterable[str],
        storage: Storage,
        *,
        command: str,
        timeout_ms: int,
        clock: Clock | None = None,
        tables: Iterable[str] = (),
    ) -> None:
        """``tables``: those of ``locations`` that are Delta tables, leased from beside."""
        beside = set(tables)
        self.places = [_Place(loc, storage, table=loc in beside) for loc in sorted(set(locations))]
        self.clock = clock or SystemClock()
        self.timeout_ms = timeout_ms
        self.host = socket.gethostname()
        self.me = Holder(uuid.uuid4().hex, self.host, os.getpid(), command, 0)
        self.lost: LeaseLost | None = None
        self.on_lost: Callable[[], None] | None = None  # how the job stops writing at once
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def live_holders(self) -> list[Holder]:
        """Who holds each location's lease now and is alive (``segcompact health``): nothing
        is written."""
        now = self.clock.now_ms()
        return [h for h in self.last_holders() if h is not None and h.live(now, self.host)]

    def last_holders(self) -> list[Holder | None]:
        """What each location's latest lease file says, live or not (None: there is none):
        nothing is written. A holder renewing while it is read is read again."""
        out = []
        for place in self.places:
            while True:
                seen = place.epochs()
                try:
                    out.append(place.read(seen[-1]) if seen else None)
                    break
                except FileNotFoundError:
                    continue  # renewed (that epoch removed) while read
        return out

    def _holder(self, *, released: bool = False) -> Holder:
        expires = self.clock.now_ms() + self.timeout_ms
        return replace(self.me, expires_ms=expires, released=released)

    def acquire(self) -> None:
        """Take every location's lease, or none: :class:`LeaseHeld` names a live holder."""
        taken: list[_Place] = []
        _HELD_HERE.add(self.me.owner)
        try:
            for place in self.places:
                self._take(place)
                taken.append(place)
        except BaseException:
            self._release(taken)
            _HELD_HERE.discard(self.me.owner)
            raise

    def _take(self, place: _Place) -> None:
        while True:
            seen = place.epochs()
            epoch = seen[-1] + 1 if seen else 0
            try:
                if seen and (holder := place.read(seen[-1])).live(self.clock.now_ms(), self.host):
                    raise self._held(place, holder)
                place.fs.makedirs(place.dir)
                if not place.write(epoch, self._holder()):  # another job took it just now
                    raise self._held(place, place.read(epoch))
            except FileNotFoundError:
                continue  # its holder renewed (and removed that epoch) while it was read
            place.epoch = epoch
            place.drop_below(epoch, seen)
            return

    def _held(self, place: _Place, holder: Holder) -> LeaseHeld:
        return LeaseHeld(
            f"{place.location} is in use by {holder.describe()}; stop that job, or wait for "
            "its lease to expire"
        )

    def renew(self) -> None:
        """Extend every lease by the timeout; :class:`LeaseLost` if another job took one."""
        if self.lost is not None:
            raise self.lost
        for place in self.places:
            nxt = place.epoch + 1
            if not place.write(nxt, self._holder()):
                self.lost = LeaseLost(
                    f"lost the lease on {place.location} to {place.read(nxt).describe()} "
                    f"(this job did not renew it within {duration(self.timeout_ms)})"
                )
                raise self.lost
            place.fs.remove(place.path(place.epoch))
            place.epoch = nxt

    def keep(self) -> None:
        """Renew in a background thread every third of the timeout until :meth:`release`;
        :attr:`on_lost`, once set, is called if a renewal finds the lease taken."""

        def loop() -> None:
            while not self._stop.wait(self.timeout_ms / 3000):
                try:
                    self.renew()
                except LeaseLost as e:
                    log.error("%s", e)
                    if self.on_lost is not None:
                        self.on_lost()
                    return
                except OSError as e:  # the store is unreachable: try again, until expiry
                    log.warning("lease renewal failed: %s", e)

        self._renewer = threading.Thread(target=loop, name="segcompact-lease", daemon=True)
        self._renewer.start()

    def release(self) -> None:
        """Stop renewing and mark every lease released (a lost one is left to its taker)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        if self.lost is None:
            self._release(self.places)
        _HELD_HERE.discard(self.me.owner)

    def _release(self, places: list[_Place]) -> None:
        for place in places:
            if place.epoch >= 0 and place.write(place.epoch + 1, self._holder(released=True)):
                place.fs.remove(place.path(place.epoch))
                place.epoch += 1

    def __enter__(self) -> Lease:
        """Acquire, then keep renewing."""
        self.acquire()
        self.keep()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        """Release; a lease lost meanwhile fails the block (unless it failed already)."""
        self.release()
        if kind is None and self.lost is not None:
            raise self.lost
