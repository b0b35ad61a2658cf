"""``segcompact run``: the streaming compactor, until stopped (SIGTERM, SIGINT, a lost lease)
or, ``once``, over what is there, with a progress bar and a summary line."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from segcompact.app.preconditions import lease, load, serve_metrics, source_roots
from segcompact.app.reply import EXIT_DATA, Reply
from segcompact.app.session import session
from segcompact.errors import UsageError

if TYPE_CHECKING:
    from tqdm import tqdm

    from segcompact.backlog import Backlog
    from segcompact.config import CompactorConfig
    from segcompact.metrics import JobMetrics


def run(config_path: str, *, once: bool, uncleanable_ok: bool, jvm_output: str | None) -> Reply:
    """The job; ``once``: its summary line, and exit code 1 when a partition became
    uncleanable (unless ``uncleanable_ok``)."""
    if uncleanable_ok and not once:
        raise UsageError("--uncleanable-ok: only with --once (the continuous job does not exit)")
    config = load(config_path, writes=True)
    source_roots(config)
    from segcompact.spark.job import Compactor, GracefulStop
    from segcompact.spark.jvm import stop_session

    metrics = _metrics(config)  # a port in use: exit 2 before Spark starts
    with lease(config, "run") as held:
        stop = GracefulStop()
        if not once:
            # Before Spark starts: its JVM ignores SIGTERM, and this process stops it.
            stop.install()
            held.on_lost = stop.requested.set
        spark = session(config, jvm_output, long_running=not once)
        compactor = Compactor(spark, config, metrics=metrics)
        if once:
            held.on_lost = lambda: compactor.request_stop(trigger_active=False)
            backlog = compactor.backlog()
            with _progress(backlog.total) as bar:
                summary = compactor.run_once(
                    on_batch=lambda batch_id: _advance(bar, backlog, batch_id), backlog=backlog
                )
            failure = summary.failure()
            if failure is not None and not uncleanable_ok:
                error = f"segcompact: error: {failure} (--uncleanable-ok: exit 0)"
                return Reply((summary.line(),), (error,), EXIT_DATA)
            return Reply((summary.line(),))  # stdout: what a batch scheduler keeps
        if not stop.requested.is_set():  # a stop while Spark started: no query
            stop.wait(compactor, compactor.start(once=False))
        stop_session(spark)  # nothing of the job outlives it
    return Reply()


def _metrics(config: CompactorConfig) -> JobMetrics | None:
    """The job's metrics, served on ``[metrics]``'s port (the job gives them to Spark's metrics
    system with ``spark = true``); None when ``[metrics]`` asks for neither."""
    port = config.metrics.port
    if port is None and not config.metrics.spark:
        return None
    from segcompact.metrics import JobMetrics

    metrics = JobMetrics()
    if port is not None:
        serve_metrics(metrics, config.metrics.host, port)
    return metrics


def _progress(total: int) -> tqdm[Any]:
    """``run --once``'s progress bar, in bytes of segments, on a terminal (none when stderr is
    not one, as in a log)."""
    from tqdm import tqdm

    return tqdm(
        desc="segments",
        total=total,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        bar_format="{l_bar}{bar}| {n_fmt}B/{total_fmt}B [{elapsed}<{remaining}, {rate_fmt}]",
        file=sys.stderr,
        disable=None,
    )


def _advance(bar: tqdm[Any], backlog: Backlog, batch_id: int) -> None:
    """The bar at the end of micro-batch ``batch_id`` (segments rolled after the start, which
    the query reads too, raise its total)."""
    try:
        done = backlog.done(batch_id)
    except Exception as e:  # a progress bar never stops the job
        logging.getLogger("segcompact").debug("progress: %s", e)
        return
    if bar.total is not None and done > bar.total:
        bar.total = done
    bar.update(done - bar.n)
