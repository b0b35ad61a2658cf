"""``segcompact export``: published versions copied out as a Kafka log dir.

Each selected partition's current version (as its publication manifest lists it) is copied to
``<to>/<topic>-<partition>/`` — its ``.log``, ``.index`` and ``.timeindex`` files, ready for a
broker or ``kafka-dump-log.sh`` — from whatever store the output is on, to a local path or any
other location. Every file is checked against the manifest's size and CRC-32C while it is
copied. An existing ``<topic>-<partition>`` under ``<to>`` is refused, never overwritten. No
Spark here.
"""

from __future__ import annotations

from dataclasses import dataclass

from segcompact.errors import SegcompactError, UsageError
from segcompact.publication import Output, Publication, RecordingDirectory, partition_name
from segcompact.storage import Storage

_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class Exported:
    topic: str
    partition: int
    version: int
    location: str
    files: int
    bytes: int


def export(
    output: Output,
    to: str,
    storage: Storage,
    *,
    topic: str | None = None,
    partition: int | None = None,
) -> list[Exported]:
    """Copy the published versions of the selected partitions under ``to``."""
    selected = [
        (t, p)
        for t, p in output.partitions()
        if (topic is None or t == topic) and (partition is None or p == partition)
    ]
    fs, root = storage.resolve(to)
    publications: list[Publication] = []
    for t, p in selected:
        target = fs.join(root, partition_name(t, p))
        if fs.exists(target):
            raise UsageError(f"{target} already exists: export into a directory without it")
        published = output.latest(t, p)
        if published is not None:
            publications.append(published)
    done = []
    for pub in publications:
        name = partition_name(pub.topic, pub.partition)
        target = fs.join(root, name)
        fs.makedirs(target)
        directory = RecordingDirectory(fs.output_directory(target))
        source = output.join(pub.directory)
        for f in pub.files:
            stream = output.fs.input_file(output.fs.join(source, f.name)).open()
            out = directory.create(f.name)
            try:
                while chunk := stream.read(_CHUNK):
                    out.write(chunk)
            finally:
                stream.close()
                out.close()
            copied = directory.files[-1]
            if copied != f:
                raise SegcompactError(
                    f"{source}/{f.name}: {copied.size} bytes, CRC-32C {copied.crc32c:#010x}; its "
                    f"publication manifest says {f.size} bytes, {f.crc32c:#010x}"
                )
        done.append(
            Exported(
                pub.topic,
                pub.partition,
                pub.version,
                target,
                len(pub.files),
                sum(f.size for f in pub.files),
            )
        )
    return done
