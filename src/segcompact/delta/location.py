"""Whether delta-rs opens a table, from its location alone: the one place the engine that reads
a table is chosen (delta-rs where it can, Spark otherwise)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from segcompact.config.locations import is_table_name
from segcompact.storage.settings import scheme_of

if TYPE_CHECKING:
    from segcompact.storage import Storage


def local_path(location: str) -> str | None:
    """The local path of a table location (a ``file:`` URI or a plain path), else None."""
    if location.startswith("file:"):
        return unquote(urlparse(location).path)
    if "://" in location or ":" in location.split("/", 1)[0]:
        return None  # another file system (s3a://, abfss://, dbfs:/…)
    return location


def native_location(location: str, storage: Storage) -> tuple[str, dict[str, str]] | None:
    """Where and how delta-rs opens the table at ``location`` (a path, absolute or relative to
    the working directory, or a URI); None when it cannot: a catalog name, a store delta-rs is
    not given here, a relative path on a default file system that is not the local one."""
    if is_table_name(location):
        return None
    if scheme_of(location) is None and not os.path.isabs(location):
        if not storage.hadoop.get("fs.defaultFS", "file:///").startswith("file:"):
            return None  # relative to the user's home on HDFS or the like: Hadoop knows
        location = os.path.abspath(location)
    options = storage.delta_options(location)
    if options is None:
        return None
    return local_path(location) or location, options
