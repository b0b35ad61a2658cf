"""Published output versions: written aside, made current by one atomic object write.

Layout under the output location::

    <output>/.versions/<topic>-<partition>/v<N>-<attempt>/   <20-digit base>.log .index .timeindex
    <output>/.published/<topic>-<partition>/<N, 20 digits>.json   the publication manifest
    <output>/<topic>-<partition>   symlink to the current version (local disks only)

A version's files are written into a directory of their own (the attempt's random suffix keeps
two writers, or a crashed attempt and its retry, from ever writing the same file). The
publication manifest names the version, its directory and every file with its size and CRC-32C;
it is created exclusively (a hard link on local disks, a conditional write ``If-None-Match: *``
on object stores), so two writers can never both publish version N. Readers take the
highest-numbered manifest and read the files it lists: a reader sees the previous version or the
new one, never a mix. On a local disk the symlink is swapped too, so a broker can serve the
output directory; superseded versions and older manifests are removed afterwards. No Spark here.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field

import crc32c

from segcompact.errors import SegcompactError
from segcompact.format.io import OutputDirectory, OutputStream
from segcompact.format.logdir import parse_partition_dir
from segcompact.storage import FileSystem, Storage

VERSIONS = ".versions"
PUBLISHED = ".published"
_MANIFEST = re.compile(r"^(?P<version>[0-9]{20})\.json$")
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class OutputFile:
    name: str
    size: int
    crc32c: int


@dataclass(frozen=True, slots=True)
class Publication:
    """One published version of a partition: which directory holds it and its files."""

    topic: str
    partition: int
    version: int
    directory: str  # relative to the output location: .versions/<t>-<p>/v<N>-<attempt>
    files: tuple[OutputFile, ...] = field(default=())

    def to_json(self) -> bytes:
        doc = {
            "format": _FORMAT,
            "topic": self.topic,
            "partition": self.partition,
            "version": self.version,
            "directory": self.directory,
            "files": [{"name": f.name, "size": f.size, "crc32c": f.crc32c} for f in self.files],
        }
        return (json.dumps(doc, separators=(",", ":")) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Publication:
        try:
            doc = json.loads(data)
            if doc.get("format") != _FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, expected {_FORMAT}")
            return cls(
                str(doc["topic"]),
                int(doc["partition"]),
                int(doc["version"]),
                str(doc["directory"]),
                tuple(
                    OutputFile(str(f["name"]), int(f["size"]), int(f["crc32c"]))
                    for f in doc["files"]
                ),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise SegcompactError(f"publication manifest {where}: unreadable ({e})") from None


def partition_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def new_version_directory(topic: str, partition: int, version: int) -> str:
    """A fresh directory for one attempt at writing ``version``, relative to the output."""
    return f"{VERSIONS}/{partition_name(topic, partition)}/v{version}-{uuid.uuid4().hex[:8]}"


class _Checksummed:
    """A new file whose size and CRC-32C are recorded when it is closed."""

    def __init__(self, stream: OutputStream, name: str, into: list[OutputFile]) -> None:
        self._stream, self._name, self._into = stream, name, into
        self._size, self._crc = 0, 0

    def write(self, data: bytes, /) -> int:
        self._size += len(data)
        self._crc = crc32c.crc32c(data, self._crc)
        return self._stream.write(data)

    def close(self) -> None:
        self._stream.close()
        self._into.append(OutputFile(self._name, self._size, self._crc))


class RecordingDirectory:
    """An output directory that records each file written: what a publication lists."""

    def __init__(self, directory: OutputDirectory) -> None:
        self._directory = directory
        self.files: list[OutputFile] = []

    @property
    def location(self) -> str:
        return self._directory.location

    def create(self, name: str) -> OutputStream:
        return _Checksummed(self._directory.create(name), name, self.files)


class Output:
    """The output location of one job, on whichever file system it is."""

    def __init__(self, location: str, storage: Storage) -> None:
        self.location = location
        self.storage = storage
        self.fs: FileSystem
        self.fs, self.path = storage.resolve(location)

    def join(self, *names: str) -> str:
        return self.fs.join(self.path, *names)

    def version_directory(self, relative: str) -> RecordingDirectory:
        return RecordingDirectory(self.fs.output_directory(self.join(relative)))

    def latest(self, topic: str, partition: int) -> Publication | None:
        """The partition's published version; None before its first."""
        versions = self._manifests(topic, partition)
        if not versions:
            return None
        where = self._manifest_path(topic, partition, versions[-1])
        return Publication.from_json(self.fs.read_bytes(where), where)

    def published_versions(self) -> dict[tuple[str, int], int]:
        """Each partition's published version number, from one listing of the manifests (an
        object store lists them a thousand a request, where a listing a partition would cost
        a request each)."""
        try:
            paths = self.fs.walk_files(self.join(PUBLISHED))
        except FileNotFoundError:
            return {}
        versions: dict[tuple[str, int], int] = {}
        for path in paths:
            parent, name = path.rstrip("/").rsplit("/", 2)[-2:]
            tp, manifest = parse_partition_dir(parent), _MANIFEST.match(name)
            if tp is not None and manifest is not None:
                versions[tp] = max(versions.get(tp, 0), int(manifest["version"]))
        return versions

    def partitions(self) -> list[tuple[str, int]]:
        """Every partition with a published version, sorted."""
        try:
            entries = self.fs.list_dir(self.join(PUBLISHED))
        except FileNotFoundError:
            return []
        found = [parse_partition_dir(e.name) for e in entries if e.is_dir]
        return sorted(tp for tp in found if tp is not None)

    def publish(self, publication: Publication) -> None:
        """Make ``publication`` the partition's current version; raises when another writer
        published this version number first."""
        tp = partition_name(publication.topic, publication.partition)
        where = self._manifest_path(publication.topic, publication.partition, publication.version)
        self.fs.makedirs(self.join(PUBLISHED, tp))
        if not self.fs.create_exclusive(where, publication.to_json()):
            raise SegcompactError(
                f"output {self.location}: version {publication.version} of {tp} was published "
                "by another writer (two jobs write to one output location)"
            )
        self.fs.point(self.join(tp), self.join(publication.directory))

    def remove_superseded(
        self, topic: str, partition: int, keep: Publication | None = None, attempts: int = 3
    ) -> list[str]:
        """Remove every version directory of the partition but the published one (``keep``,
        read when not given), and older manifests; each one still there afterwards, with why."""
        keep = keep or self.latest(topic, partition)
        tp = partition_name(topic, partition)
        keep_name = None if keep is None else keep.directory.rsplit("/", 1)[-1]
        left: dict[str, str] = {}
        for _ in range(attempts):
            left = {}
            try:
                entries = self.fs.list_dir(self.join(VERSIONS, tp))
            except FileNotFoundError:
                entries = []
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name == keep_name:
                    continue
                try:
                    self.fs.remove_tree(entry.path)
                except OSError as e:
                    left[entry.path] = e.strerror or str(e)
                if entry.path not in left and self.fs.exists(entry.path):
                    left[entry.path] = "still there after removal"
            if not left:
                break
        if keep is not None:
            for version in self._manifests(topic, partition):
                if version < keep.version:
                    self.fs.remove(self._manifest_path(topic, partition, version))
        return [f"{path}: {why}" for path, why in sorted(left.items())]

    def _manifests(self, topic: str, partition: int) -> list[int]:
        try:
            entries = self.fs.list_dir(self.join(PUBLISHED, partition_name(topic, partition)))
        except FileNotFoundError:
            return []
        return sorted(int(m["version"]) for e in entries if (m := _MANIFEST.match(e.name)))

    def _manifest_path(self, topic: str, partition: int, version: int) -> str:
        return self.join(PUBLISHED, partition_name(topic, partition), f"{version:020d}.json")
