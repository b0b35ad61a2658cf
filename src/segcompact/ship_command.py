"""``segcompact ship --config F [--once]``: the shipper as a command, beside a broker.

Checks first (a bad file, a log dir that is not there, a target it cannot reach, a metrics port
in use: one line, exit 2), then takes the log dirs' leases and polls until SIGTERM or SIGINT,
which finish the segments being uploaded and stop (the lease released). ``--once``: one poll.
"""

from __future__ import annotations

import signal

from segcompact.config.ship import load_ship_config
from segcompact.errors import ConfigError
from segcompact.ship.metrics import ShipMetrics
from segcompact.ship.results import PollResult
from segcompact.ship.shipper import Shipper


def ship(config_path: str, *, once: bool) -> PollResult | None:
    """Run the shipper; ``--once`` returns its poll's result (None for the continuous run)."""
    config = load_ship_config(config_path)
    metrics = ShipMetrics()
    shipper = Shipper(config, metrics=metrics)
    shipper.check()
    port = config.metrics.port
    if port is not None:
        try:
            metrics.serve(config.metrics.host, port)
        except OSError as e:
            raise ConfigError(
                f"[metrics] port = {port}: cannot serve on {config.metrics.host}:{port}: "
                f"{e.strerror or e}"
            ) from None
    stop = shipper.stop
    with shipper.lease() as lease:
        if once:
            return shipper.poll()  # a lease lost meanwhile fails the command as it ends
        lease.on_lost = stop.set  # another shipper took the log dir over
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        shipper.run(wait=stop.wait)
    return None
