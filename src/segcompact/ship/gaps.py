"""What the shipper could not ship, listed in one place per source root for ``segcompact
status``: ``<to>/.segcompact-ship/not-shipped/<topic>-<partition>.<start:020d>.json``, one
object per gap or damaged segment, written (exclusively) beside its entry in the partition's
manifest. One listing answers for every partition, however many there are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from segcompact.discovery import SHIPPER_DIR
from segcompact.humanize import printable_path
from segcompact.ship.manifest import Entry
from segcompact.storage import FileSystem, Storage

NOT_SHIPPED = "not-shipped"
_NAME = re.compile(r"^(?P<partition>.+-[0-9]+)\.(?P<start>[0-9]{20})\.json$")


def record(fs: FileSystem, root: str, partition_dir: str, entry: Entry) -> None:
    """List ``entry`` (a gap or a damaged segment) of ``partition_dir`` under ``root``."""
    directory = fs.join(root, SHIPPER_DIR, NOT_SHIPPED)
    fs.makedirs(directory)
    fs.create_exclusive(
        fs.join(directory, f"{partition_dir}.{entry.start:020d}.json"), entry.to_json()
    )


def not_shipped(roots: Iterable[str], storage: Storage) -> list[dict[str, str]]:
    """Each gap and damaged segment the shipper listed under ``roots``, in ``status``'s
    ``skipped`` form: the partition's path and what is missing."""
    out = []
    for root in roots:
        fs, path = storage.resolve(root)
        directory = fs.join(fs.abspath(path), SHIPPER_DIR, NOT_SHIPPED)
        try:
            found = fs.list_dir(directory)
        except FileNotFoundError:
            continue  # nothing shipped here by segcompact ship, or nothing missing
        except OSError as e:
            out.append({"path": printable_path(directory), "reason": f"cannot be listed: {e}"})
            continue
        for f in found:
            m = _NAME.match(f.name)
            if m is None:
                continue
            where = printable_path(fs.join(fs.abspath(path), m["partition"]))
            try:
                entry = Entry.from_json(fs.read_bytes(f.path), f.path)
            except (OSError, ValueError) as e:
                out.append({"path": where, "reason": f"not shipped: unknown ({e})"})
                continue
            kind = "gap" if entry.kind == "gap" else "damaged"
            out.append({"path": where, "reason": f"not shipped ({kind}): {entry.describe()}"})
    return sorted(out, key=lambda s: (s["path"], s["reason"]))


__all__ = ["NOT_SHIPPED", "not_shipped", "record"]
