"""The JVM of a session segcompact starts: deaf to SIGTERM, ended by its driver.

systemd's default ``KillMode=control-group`` sends SIGTERM to every process of a unit at once,
the JVM pyspark starts (a child of the Python driver) among them. HotSpot's handler for
SIGTERM runs the shutdown hooks and exits, so the JVM died under the driver's batch in flight
(``Py4JNetworkError``, an ``EOFError`` from pyspark's accumulator server, exit 1). HotSpot does
not install that handler for a signal that is ignored when it starts (``JVM_RegisterSignal``
returns for ``SHUTDOWN*_SIGNAL`` when ``is_sig_ignored``, as for ``nohup``'s SIGHUP), and an
ignored signal stays ignored across ``exec``: a JVM started with SIGTERM ignored lives on
until the driver stops Spark, and so do the Python processes it starts that keep SIGTERM's
disposition (the streaming source's runner; not pyspark's daemons that look up and create a
data source, which a running query does not need). The driver handles SIGTERM
itself (:class:`~segcompact.spark.job.GracefulStop`), then ends the JVM with
:func:`stop_session`. Should the driver die first (SIGKILL), the JVM exits at the end of its
stdin, as pyspark's gateway does whenever its driver goes.

Spark's Python daemon (``segcompact.spark.daemon``) sets its own SIGTERM handler, and its
workers the default action: it blocks the signal instead.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

from py4j.clientserver import SHUTDOWN_FINALIZER_WORKER, FinalizerWorker
from pyspark import SparkContext, java_gateway
from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

# How long the JVM may take to exit once its stdin is closed (its shutdown hooks run).
JVM_EXIT_TIMEOUT_S = 60


@contextlib.contextmanager
def ignoring_sigterm() -> Iterator[None]:
    """A JVM that pyspark starts in the block starts with SIGTERM ignored.

    ``launch_gateway`` replaces any ``preexec_fn`` a caller gives it with its own (which
    ignores SIGINT), so its ``Popen`` is wrapped for the block: the child ignores SIGTERM too,
    after fork and before exec, while this process keeps its own handlers throughout.
    """
    popen = java_gateway.Popen  # type: ignore[attr-defined]

    def deaf_popen(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        theirs = kwargs.get("preexec_fn")

        def preexec() -> None:
            if theirs is not None:
                theirs()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        return popen(*args, **{**kwargs, "preexec_fn": preexec})

    java_gateway.Popen = deaf_popen  # type: ignore[attr-defined,assignment]
    try:
        yield
    finally:
        java_gateway.Popen = popen  # type: ignore[attr-defined]


def stop_session(spark: SparkSession) -> None:
    """Stop the session, then end the JVM this process started and wait for it: its Python
    daemon, stopped by Spark, ends its workers. A JVM started otherwise (``spark-submit``'s)
    is its starter's to end."""
    spark.stop()
    if end_jvm(SparkContext._gateway):
        # A session started after this one starts a JVM of its own.
        SparkContext._gateway = None
        SparkContext._jvm = None


def end_jvm(gateway: Any) -> bool:
    """End the JVM of pyspark's ``gateway`` and wait for it, if this process started it (else
    False): py4j's pending releases sent first, then its stdin closed (pyspark's gateway,
    ``PythonGatewayServer``, exits at its end), killed if it has not exited within
    :data:`JVM_EXIT_TIMEOUT_S`."""
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return False
    _send_releases(gateway)
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(timeout=JVM_EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:  # its shutdown hooks hang: it must not outlive us
        log.warning("the JVM did not exit within %d s: killed", JVM_EXIT_TIMEOUT_S)
        proc.kill()
        proc.wait()
    return True


def _send_releases(gateway: Any) -> None:
    """Tell the JVM of every Java object this process let go of, then end py4j's thread that
    does so: before the JVM is told to exit.

    py4j releases a Java object whose Python reference goes from a worker thread of its own
    (a "memory delete" command each). Spark's stop lets go of many; a release still in flight
    when the JVM exits met its closed connection, and py4j logged that on the root logger with
    its traceback (a SIGTERM'd ``run`` that then ended 0, its batch committed). The worker
    takes its queue from the right: the end marker, added on the left, comes after every
    release already queued. A release queued later is never sent: the JVM is going."""
    queue = getattr(getattr(gateway, "_gateway_client", None), "finalizer_deque", None)
    if queue is None:
        return
    workers = [
        t for t in threading.enumerate() if isinstance(t, FinalizerWorker) and t.deque is queue
    ]
    queue.appendleft(SHUTDOWN_FINALIZER_WORKER)
    for worker in workers:
        worker.join(timeout=JVM_EXIT_TIMEOUT_S)
