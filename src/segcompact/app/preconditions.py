"""What a command checks before any work, each in this one place: the config and the file
systems of its locations, the source roots, the ledger's secret, the job's lease, the metrics
port. A failure is one line naming what is wrong (``ConfigError``/``UsageError``: exit 2), before
Spark starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from segcompact.config import CompactorConfig, is_table_name, load_config
from segcompact.config.model import LOCATION_KEYS
from segcompact.erasure.keyhash import job_secret
from segcompact.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from segcompact.lease import Lease
    from segcompact.metrics import JobMetrics
    from segcompact.ship.metrics import ShipMetrics


def load(path: str, *, writes: bool = False) -> CompactorConfig:
    """The config, every location's file system usable here; for a command that ``writes``
    the tables, also the ledger's secret when a topic has a deletion SLA."""
    config = load_config(path)
    config.check_storage()
    if writes:
        job_secret(config)
    return config


def source_roots(config: CompactorConfig) -> None:
    """Every ``[source] paths`` root exists (a typo'd root: exit 2 before Spark)."""
    from segcompact.discovery import check_roots

    check_roots(config.source.paths, config.storage)


def table_paths(config: CompactorConfig, command: str) -> None:
    """Every table is named by its path, not a catalog name: ``command`` reads its files."""
    for section, name, table in LOCATION_KEYS:
        location = getattr(getattr(config, section), name)
        if table and is_table_name(location):
            raise UsageError(
                f"[{section}] {name} = {location!r} is a catalog name: {command} reads "
                "the table's files and needs its path"
            )


def lease(config: CompactorConfig, command: str) -> Lease:
    """This job's lease on the locations it writes (``with``: taken before Spark starts, renewed
    while ``command`` runs): a second job is refused, and a lease lost meanwhile fails it."""
    from segcompact.lease import job_lease

    return job_lease(config, command)


def serve_metrics(metrics: JobMetrics | ShipMetrics, host: str, port: int) -> None:
    """``metrics`` served on ``host:port`` (``[metrics] port``): a port in use is the config's
    mistake."""
    try:
        metrics.serve(host, port)
    except OSError as e:
        raise ConfigError(
            f"[metrics] port = {port}: cannot serve on {host}:{port}: {e.strerror or e}"
        ) from None
