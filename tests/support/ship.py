"""What the tests read of a shipper's target: a partition's whole manifest."""

from __future__ import annotations

from segcompact.ship.manifest import Entry, PartitionManifest

_ENTRY_SUFFIX = ".json"


def manifest_entries(manifest: PartitionManifest) -> list[Entry]:
    """Every entry of ``manifest``, in offset order ([] when there is none)."""
    try:
        found = manifest.fs.list_dir(manifest.dir)
    except FileNotFoundError:
        return []
    read = [
        Entry.from_json(manifest.fs.read_bytes(f.path), f.path)
        for f in found
        if f.name[:20].isdigit() and f.name.endswith(_ENTRY_SUFFIX)
    ]
    return sorted(read, key=lambda e: e.start)
