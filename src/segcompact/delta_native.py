"""Delta tables on the local file system read and vacuumed by delta-rs, without the JVM.

Opening a table, its version, properties and commit times, and VACUUM take milliseconds here
against seconds of Spark jobs each, which an erasure round pays for every table. Spark writes
the tables; delta-rs only reads their log and, for VACUUM, removes files and logs the
``VACUUM START``/``VACUUM END`` commits Delta's own VACUUM logs.
"""

from __future__ import annotations

from urllib.parse import unquote, urlparse

from deltalake import DeltaTable
from deltalake.exceptions import DeltaProtocolError


def local_path(location: str) -> str | None:
    """The local path of a table location (a ``file:`` URI or a plain path), else None."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)
    if "://" in location or ":" in location.split("/", 1)[0]:
        return None  # another file system (s3a://, abfss://, dbfs:/…)
    return location


def open_table(path: str) -> DeltaTable:
    return DeltaTable(path)


def commit_times(table: DeltaTable, since: int) -> dict[int, int]:
    """Each commit's time (epoch ms, as its commit info has it) from version ``since`` on."""
    newest = table.version()
    if newest < since:
        return {}
    return {
        int(h["version"]): int(h["timestamp"])
        for h in table.history(newest - since + 1)
        if "version" in h and "timestamp" in h
    }


def vacuum(table: DeltaTable) -> bool:
    """VACUUM with the table's own ``delta.deletedFileRetentionDuration`` and the retention check
    on, files unknown to the log included (what a failed write left). False when delta-rs cannot
    write this table's protocol (Spark's VACUUM then does it)."""
    try:
        table.vacuum(dry_run=False, enforce_retention_duration=True, full=True)
    except DeltaProtocolError:
        return False
    return True


__all__ = ["DeltaTable", "commit_times", "local_path", "open_table", "vacuum"]
