"""Where segcompact's files are: the one seam between its code and a file system.

Everything segcompact reads and writes outside its Delta tables goes through a
:class:`FileSystem`: source discovery and segment reads, the source's manifest, materialisation
and publication, export and the erasure scan. :class:`Storage` picks one for a location, from
the location's scheme and the job's storage settings:

- a local path or ``file:`` URI: :class:`~segcompact.storage.local.LocalFileSystem` (``os``:
  durable writes, hard links for exclusive creates, symlinks), also for Databricks'
  FUSE-mounted ``/Volumes/…`` and ``dbfs:/`` (``/dbfs/…``), where links are not available;
- ``s3a://``, ``s3://``, ``abfss://``, ``gs://``:
  :class:`~segcompact.storage.objectstore.ObjectStore` over fsspec's file system for the
  scheme (s3fs, adlfs, gcsfs), with exclusive creates by conditional writes
  (``If-None-Match: *``).

Only this package calls ``os`` or ``open`` on a configured location.
"""

from segcompact.storage.base import FileInfo, FileSystem
from segcompact.storage.local import LocalFileSystem, LocalInputFile, LocalOutputDirectory
from segcompact.storage.settings import Storage

__all__ = [
    "FileInfo",
    "FileSystem",
    "LocalFileSystem",
    "LocalInputFile",
    "LocalOutputDirectory",
    "Storage",
]
