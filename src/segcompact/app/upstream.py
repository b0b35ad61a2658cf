"""The source copies of partitions with deletions, which ``sla`` and ``verify-erasure`` name:
not segcompact's to erase."""

from __future__ import annotations

from collections.abc import Iterable

from segcompact.config import CompactorConfig

NOTE = (
    "source segments are not owned by segcompact: Kafka's retention and compaction (or "
    "whoever copied them) erase them"
)


def upstream(
    config: CompactorConfig, partitions: Iterable[tuple[str, int]]
) -> list[dict[str, str]]:
    """Each of ``partitions``' directories under ``[source] paths`` that exists, with the note."""
    storage = config.storage
    found = []
    for t, p in sorted(partitions):
        for root in config.source.paths:
            fs, path = storage.resolve(root)
            if fs.exists(fs.join(path, f"{t}-{p}")):
                found.append({"location": fs.join(path, f"{t}-{p}"), "note": NOTE})
    return found
