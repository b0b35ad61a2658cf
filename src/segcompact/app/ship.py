"""``segcompact ship --config F [--once]``: the shipper as a command, beside a broker.

Checks first (a bad file, a log dir that is not there, a target it cannot reach, a metrics port
in use: one line, exit 2), then takes the log dirs' leases and polls until SIGTERM or SIGINT,
which finish the segments being uploaded and stop (the lease released). ``--once``: one poll.
"""

from __future__ import annotations

import signal

from segcompact.app.preconditions import serve_metrics
from segcompact.app.reply import EXIT_DATA, Reply
from segcompact.config.ship import load_ship_config
from segcompact.ship.metrics import ShipMetrics
from segcompact.ship.shipper import Shipper


def ship(config_path: str, *, once: bool) -> Reply:
    """Run the shipper; ``--once``: its poll's line, exit code 1 when a segment failed or was
    damaged."""
    config = load_ship_config(config_path)
    metrics = ShipMetrics()
    shipper = Shipper(config, metrics=metrics)
    shipper.check()
    if config.metrics.port is not None:
        serve_metrics(metrics, config.metrics.host, config.metrics.port)
    stop = shipper.stop
    with shipper.lease() as lease:
        if once:
            result = shipper.poll()  # a lease lost meanwhile fails the command as it ends
        else:
            lease.on_lost = stop.set  # another shipper took the log dir over
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
            shipper.run(wait=stop.wait)
            return Reply()
    return Reply((result.line(),), code=EXIT_DATA if result.errors or result.damaged else 0)
