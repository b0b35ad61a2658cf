"""The shipper's manifest: what it shipped of each partition, and what it could not.

It lives beside the data, one small JSON object per entry, in
``<to>/<topic>-<partition>/.ship/<start:020d>.json``: each written once (an exclusive create),
after the segment it names is published, so entries are never rewritten and a restart reads
where it stopped. Discovery never reads it (a directory inside a partition directory).
An entry covers offsets ``[start, end)``, ``end`` being the next segment's base offset:

- ``shipped``: the segment ``start`` is at ``<to>/<topic>-<partition>/<start>.log``, with its
  size, CRC-32C of the whole file, batch count and last offset;
- ``gap``: those offsets were deleted by the broker before they were shipped;
- ``damaged``: the local segment failed its checks (``reason`` says where) and was not shipped.

Beside the entries, ``owner.json`` names the log dir whose shipper ships the partition: with
replication, every broker holding a replica runs a shipper to the same root, and the replicas'
segments need not start at the same offsets, so one of them (the first to claim it) ships it.
A shipper that takes a partition over (its owner's lease long gone) writes the next owner file,
``owner-<n:06d>.json``, exclusively: the highest one names the owner, and of two takers only
one writes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Literal

from segcompact.errors import SegcompactError
from segcompact.storage import FileSystem

MANIFEST_DIR = ".ship"
OWNER = "owner.json"  # which log dir ships this partition (the first to claim it)
_OWNER_AFTER = re.compile(r"^owner-(?P<n>[0-9]{6})\.json$")  # those that took it over, in turn
_ENTRY = re.compile(r"^(?P<start>[0-9]{20})\.json$")

Kind = Literal["shipped", "gap", "damaged"]
KINDS: tuple[Kind, ...] = ("shipped", "gap", "damaged")


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a partition's manifest."""

    kind: Kind
    start: int
    end: int
    time_ms: int  # when it was written
    size: int = 0
    crc32c: int = 0
    batches: int = 0
    last_offset: int = -1
    reason: str = ""

    def describe(self) -> str:
        """One line for a gap or damage: what is missing, and why."""
        what = "deleted before it was shipped" if self.kind == "gap" else self.reason
        return f"offsets {self.start} to {self.end - 1}: {what}"

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Entry:
        try:
            fields = json.loads(data)
            entry = cls(**fields)
        except (ValueError, TypeError) as e:
            raise SegcompactError(f"{where}: not a shipper manifest entry ({e})") from None
        if entry.kind not in KINDS or not entry.start < entry.end:
            raise SegcompactError(f"{where}: not a shipper manifest entry ({fields})")
        return entry


class PartitionManifest:
    """The manifest of one partition directory under the shipper's target."""

    def __init__(self, fs: FileSystem, partition_dir: str) -> None:
        self.fs = fs
        self.partition_dir = partition_dir
        self.dir = fs.join(partition_dir, MANIFEST_DIR)

    def path(self, start: int) -> str:
        return self.fs.join(self.dir, f"{start:020d}.json")

    def last(self) -> Entry | None:
        """The entry that goes furthest (the one that starts last): where shipping resumes,
        for one listing and one read however long the manifest is."""
        try:
            found = self.fs.list_dir(self.dir)
        except FileNotFoundError:
            return None
        names = sorted(f.name for f in found if not f.is_dir and _ENTRY.match(f.name))
        if not names:
            return None
        path = self.fs.join(self.dir, names[-1])
        return Entry.from_json(self.fs.read_bytes(path), path)

    def add(self, entry: Entry) -> bool:
        """Write ``entry``; False when one is there for its start already (written by an
        earlier run that stopped before it went on)."""
        self.fs.makedirs(self.dir)
        return self.fs.create_exclusive(self.path(entry.start), entry.to_json())

    def owner(self, log_dir_id: str) -> Owner:
        """The log dir that ships this partition, from its highest owner file; ``log_dir_id``,
        claimed now, when there is none."""
        self.fs.makedirs(self.dir)
        if self.fs.create_exclusive(self._owner_path(0), _owner_json(log_dir_id)):
            return Owner(log_dir_id, 0)
        return self.current_owner()

    def current_owner(self) -> Owner:
        """The owner the highest owner file names (one listing and one read)."""
        found = [0]  # owner.json, there once claimed
        for f in self.fs.list_dir(self.dir):
            if m := _OWNER_AFTER.match(f.name):
                found.append(int(m["n"]))
        path = self._owner_path(max(found))
        try:
            return Owner(str(json.loads(self.fs.read_bytes(path))["log_dir"]), max(found))
        except (ValueError, TypeError, KeyError) as e:
            raise SegcompactError(f"{path}: not a shipper's owner file ({e})") from None

    def take_over(self, previous: Owner, log_dir_id: str) -> bool:
        """Name ``log_dir_id`` the owner after ``previous``; False when another shipper wrote
        that owner file first."""
        return self.fs.create_exclusive(
            self._owner_path(previous.generation + 1), _owner_json(log_dir_id)
        )

    def _owner_path(self, generation: int) -> str:
        name = OWNER if generation == 0 else f"owner-{generation:06d}.json"
        return self.fs.join(self.dir, name)


@dataclass(frozen=True, slots=True)
class Owner:
    """The log dir that ships a partition, and which owner file says so (0: ``owner.json``)."""

    log_dir: str
    generation: int


def _owner_json(log_dir_id: str) -> bytes:
    return json.dumps({"log_dir": log_dir_id}).encode()
