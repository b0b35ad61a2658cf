"""Which file system a location is on, and the settings and credentials it is opened with.

The settings are the Hadoop ones a config's ``[spark]`` section gives Spark
(``"spark.hadoop.fs.s3a.endpoint"`` and the like), so both sides of the job reach the same
store the same way; what they leave out comes from the standard environment (``AWS_*``,
``AZURE_STORAGE_*``, ``GOOGLE_APPLICATION_CREDENTIALS``) and instance credentials, as each
SDK finds them. :meth:`Storage.check` turns what a location needs and cannot get (its library,
credentials) into a :class:`~segcompact.errors.ConfigError` naming the config key.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from segcompact.errors import ConfigError
from segcompact.storage.base import FileSystem
from segcompact.storage.local import LOCAL, LocalFileSystem

HADOOP_PREFIX = "spark.hadoop."
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+):")
_S3 = ("s3", "s3a", "s3n")
_AZURE = ("abfs", "abfss", "az")
_GCS = ("gs", "gcs")
# The package each scheme's fsspec file system comes in, and the extra that installs it.
_LIBRARY = {
    **{s: ("s3fs", "s3") for s in _S3},
    **{s: ("adlfs", "azure") for s in _AZURE},
    **{s: ("gcsfs", "gcs") for s in _GCS},
}
_NO_LINKS = LocalFileSystem(links=False)
_FUSE_MOUNTS = ("/Volumes/", "/dbfs/")  # Databricks: object storage behind FUSE


def scheme_of(location: str) -> str | None:
    """``s3a`` for ``s3a://b/k``; None for a local path."""
    m = _SCHEME.match(location)
    return m["scheme"].lower() if m else None


@dataclass(frozen=True)
class Storage:
    """The storage settings of one job: Hadoop keys without ``spark.hadoop.``
    (``fs.s3a.endpoint``). Picklable: Spark tasks open their files with it."""

    hadoop: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, spark_settings: Mapping[str, str]) -> Storage:
        """From a config's ``[spark]`` settings: the ``spark.hadoop.*`` ones."""
        return cls(
            {
                k.removeprefix(HADOOP_PREFIX): str(v)
                for k, v in spark_settings.items()
                if k.startswith(HADOOP_PREFIX)
            }
        )

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.hadoop.items())))

    def resolve(self, location: str) -> tuple[FileSystem, str]:
        """The file system ``location`` is on and its path there."""
        scheme = scheme_of(location)
        if scheme is None:
            fs = _NO_LINKS if location.startswith(_FUSE_MOUNTS) else LOCAL
            return fs, location
        if scheme == "file":
            return LOCAL, unquote(urlparse(location).path)
        if scheme == "dbfs":
            return _NO_LINKS, "/dbfs/" + location.split(":", 1)[1].lstrip("/")
        return _object_store(self, scheme), location

    def opens(self, location: str) -> bool:
        """Whether the Python side opens ``location`` (Spark alone opens a Delta table on
        ``hdfs://`` and the like)."""
        scheme = scheme_of(location)
        return scheme in (None, "file", "dbfs") or scheme in _LIBRARY

    def filesystem(self, location: str) -> FileSystem:
        return self.resolve(location)[0]

    def check(self, key: str, location: str, *, table: bool = False) -> None:
        """Raise a :class:`ConfigError` naming ``key`` when ``location``'s file system cannot
        be used here: an unknown scheme, a missing library or no credentials. A Delta
        ``table`` may be on any file system Spark's Hadoop has (``hdfs://``, ``wasbs://``…):
        only Spark opens those."""
        scheme = scheme_of(location)
        if scheme is None or scheme == "file" or (table and scheme not in _LIBRARY):
            return
        if scheme == "dbfs":
            if not os.path.isdir("/dbfs"):
                raise ConfigError(
                    f"{key} = {location!r}: dbfs:/ needs the /dbfs mount of a Databricks "
                    "cluster (use a /Volumes/… path or an object store URI elsewhere)"
                )
            return
        if scheme not in _LIBRARY:
            raise ConfigError(
                f"{key} = {location!r}: unknown scheme {scheme}:// (expected a local path, "
                "file://, s3a://, s3://, abfss://, gs://, dbfs:/ or /Volumes/…; only a Delta "
                "table may be on another Hadoop file system, such as hdfs://)"
            )
        package, extra = _LIBRARY[scheme]
        try:
            __import__(package)
        except ImportError:
            raise ConfigError(
                f"{key} = {location!r}: {scheme}:// needs the {package} package "
                f"(pip install 'segcompact[{extra}]')"
            ) from None
        if scheme in _S3 and not _s3_credentials(self.hadoop):
            raise ConfigError(
                f"{key} = {location!r}: no S3 credentials: set [spark] "
                '"spark.hadoop.fs.s3a.access.key" and "spark.hadoop.fs.s3a.secret.key", or '
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an instance role"
            )

    def spark_settings(self) -> dict[str, str]:
        """Hadoop settings Spark needs beyond the config's own: ``s3://`` through S3A where no
        other implementation is set, and the endpoint of ``AWS_ENDPOINT_URL``."""
        extra = {}
        if "fs.s3.impl" not in self.hadoop:
            extra["fs.s3.impl"] = "org.apache.hadoop.fs.s3a.S3AFileSystem"
            # The streaming checkpoint goes through FileContext, which has its own key.
            extra["fs.AbstractFileSystem.s3.impl"] = "org.apache.hadoop.fs.s3a.S3A"
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint and "fs.s3a.endpoint" not in self.hadoop:
            extra["fs.s3a.endpoint"] = endpoint
        return {HADOOP_PREFIX + k: v for k, v in extra.items()}

    def delta_options(self, location: str) -> dict[str, str] | None:
        """delta-rs' storage options for a table at ``location``; None where delta-rs is not
        given this store (Spark reads it). On S3 delta-rs commits by a conditional write
        (``If-None-Match``), which S3 and MinIO honour: no lock and no unsafe rename."""
        scheme = scheme_of(location)
        if scheme is None or scheme == "file":
            return {}
        if scheme not in _S3:
            return None
        s3 = _s3_options(self.hadoop)
        options: dict[str, str] = {}
        if s3.get("key"):
            options["AWS_ACCESS_KEY_ID"] = s3["key"]
            options["AWS_SECRET_ACCESS_KEY"] = s3["secret"]
        if s3.get("token"):
            options["AWS_SESSION_TOKEN"] = s3["token"]
        endpoint = s3.get("endpoint_url")
        if endpoint:
            options["AWS_ENDPOINT_URL"] = endpoint
            if endpoint.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        region = s3.get("client_kwargs", {}).get("region_name")
        options["AWS_REGION"] = region or os.environ.get("AWS_REGION") or "us-east-1"
        if s3.get("config_kwargs", {}).get("s3", {}).get("addressing_style") == "path":
            options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
        return options


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _s3_options(hadoop: Mapping[str, str]) -> dict[str, Any]:
    """s3fs' arguments from S3A's settings."""
    options: dict[str, Any] = {}
    key, secret = hadoop.get("fs.s3a.access.key"), hadoop.get("fs.s3a.secret.key")
    if key and secret:
        options["key"], options["secret"] = key, secret
        token = hadoop.get("fs.s3a.session.token")
        if token:
            options["token"] = token
    endpoint = hadoop.get("fs.s3a.endpoint")
    if endpoint:
        if "://" not in endpoint:
            ssl = hadoop.get("fs.s3a.connection.ssl.enabled", "true")
            endpoint = ("https://" if _truthy(ssl) else "http://") + endpoint
        options["endpoint_url"] = endpoint
    region = hadoop.get("fs.s3a.endpoint.region") or hadoop.get("fs.s3a.region")
    if region:
        options["client_kwargs"] = {"region_name": region}
    if _truthy(hadoop.get("fs.s3a.path.style.access")):
        options["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return options


def _s3_credentials(hadoop: Mapping[str, str]) -> bool:
    if hadoop.get("fs.s3a.access.key") and hadoop.get("fs.s3a.secret.key"):
        return True
    import botocore.session

    return botocore.session.get_session().get_credentials() is not None


@functools.cache
def _object_store(storage: Storage, scheme: str) -> FileSystem:
    from segcompact.storage.objectstore import ObjectStore

    if scheme in _S3:
        import s3fs

        fs = s3fs.S3FileSystem(
            **_s3_options(storage.hadoop), use_listings_cache=False, skip_instance_cache=True
        )
    elif scheme in _AZURE:
        import adlfs

        fs = adlfs.AzureBlobFileSystem(**_azure_options(storage.hadoop))
    else:
        import gcsfs

        project = storage.hadoop.get("fs.gs.project.id")
        fs = gcsfs.GCSFileSystem(project=project) if project else gcsfs.GCSFileSystem()
    return ObjectStore(scheme, fs, s3=scheme in _S3)


def _azure_options(hadoop: Mapping[str, str]) -> dict[str, Any]:
    """adlfs' arguments from the ABFS account key setting, if any (else its environment)."""
    for key, value in hadoop.items():
        m = re.fullmatch(r"fs\.azure\.account\.key\.([^.]+)\.dfs\.core\.windows\.net", key)
        if m:
            return {"account_name": m[1], "account_key": value}
    return {}
