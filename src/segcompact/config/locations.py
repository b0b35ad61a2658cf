"""Locations: what kind a written location is, how a relative one resolves, when two collide.

A location is a local path, a URI (``s3a://b/x``, ``dbfs:/x``) or, for a Delta table, a
catalog table name (``main.segcompact.state``). It is kept exactly as written. A relative path
is relative to the working directory of the process that uses it, not to the config file's
folder: DESIGN's examples (``"data/state"``) are run from the repository root, and on a cluster
a relative Hadoop path means the user's home on the default file system, which only Spark can
resolve. Callers that want local paths pinned to a folder (the demo's ``--workdir``) use
:func:`resolve_location`, through :meth:`~segcompact.config.CompactorConfig.with_base_dir`.

Whether two locations collide is decided on where they lead, not on how they are spelled
(:func:`where`): a local path made absolute against the working directory, ``~`` expanded and
every symlink followed; a URI with its scheme's spelling folded and its path's ``.``, ``..``,
doubled and trailing slashes removed. ``output = "src"`` beside ``paths = ["/abs/src/"]`` run
from ``/abs`` is the same folder, as is a symlink to it.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

# A scheme of two or more letters, so that a Windows drive ("C:") is not taken for one.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
_IDENT = r"(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_TABLE_NAME = re.compile(rf"^{_IDENT}(?:\.{_IDENT}){{1,2}}$")


def is_uri(location: str) -> bool:
    """True for ``s3a://b/x``, ``abfss://…``, ``dbfs:/x``, ``file:/x`` and the like."""
    return _URI.match(location) is not None


def is_table_name(location: str) -> bool:
    """True for a catalog name such as ``main.segcompact.state`` or ``db.state``.

    A two- or three-part dotted identifier with no slash; write a local folder whose name has a
    dot as ``./state.delta``.
    """
    return "/" not in location and _TABLE_NAME.match(location) is not None


def resolve_location(
    location: str, base_dir: str | os.PathLike[str], *, table: bool = False
) -> str:
    """``location`` joined to ``base_dir`` if it is a relative local path, else unchanged."""
    if is_uri(location) or os.path.isabs(location) or (table and is_table_name(location)):
        return location
    return os.path.normpath(os.path.join(os.path.abspath(base_dir), location))


@dataclass(frozen=True, slots=True)
class Place:
    """A location as a config file gives it: under which section and key, and whether set."""

    where: str  # "[source]", "[state]", ...
    key: str
    location: str
    in_file: bool  # False: the key's default
    table: bool = False  # a Delta table key, whose value may be a catalog name

    @property
    def is_name(self) -> bool:
        return self.table and is_table_name(self.location)

    @property
    def resolved(self) -> str:
        """Where the location leads (:func:`where`); a catalog name folded to one spelling."""
        return _normal_name(self.location) if self.is_name else where(self.location)


def overlap(a: Place, b: Place) -> bool:
    """Whether ``a`` and ``b`` are the same table, or the same folder or one inside the other,
    however each is spelled."""
    if a.is_name or b.is_name:
        return a.is_name and b.is_name and a.resolved == b.resolved
    x, y = a.resolved, b.resolved
    return x == y or x.startswith(y.rstrip("/") + "/") or y.startswith(x.rstrip("/") + "/")


def _normal_name(name: str) -> str:
    return name.replace("`", "").lower()


# Schemes that reach the same objects by another name: Hadoop's s3a, s3n and s3 read one bucket.
_SAME_STORE = {"s3": "s3a", "s3n": "s3a", "abfs": "abfss", "wasb": "wasbs", "gcs": "gs"}


def where(location: str) -> str:
    """Where a local path or URI leads, as one spelling: ``./data/../out/`` run from ``/w`` is
    ``/w/out`` (or the folder a symlink on the way points to), ``S3://b//x/./y/`` is
    ``s3a://b/x/y``. ``file:`` and ``dbfs:`` URIs lead to the local paths they name."""
    if not is_uri(location):
        return os.path.realpath(os.path.expanduser(location)).replace(os.sep, "/")
    parts = urlsplit(location)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return where(unquote(parts.path) or "/")
    if scheme == "dbfs":  # dbfs:/x is the cluster's /dbfs/x mount
        return where("/dbfs/" + location.split(":", 1)[1].lstrip("/"))
    path = posixpath.normpath("/" + parts.path.lstrip("/")).lstrip("/")
    return f"{_SAME_STORE.get(scheme, scheme)}://{parts.netloc}/{path}".rstrip("/")
