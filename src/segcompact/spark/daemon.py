"""Spark's Python daemon (``spark.python.daemon.module``) with the code of segcompact's tasks
imported before it forks its workers, so that each worker does not import it again: the
source's decoder and reducer, the materialiser's reader and encoder (pyarrow, delta-rs).

Local sessions segcompact starts use it (``segcompact.spark.session``). Where an import fails
the daemon starts all the same: the task that needs the module then reports it.

The daemon and its workers block SIGTERM: a SIGTERM to every process of the job (systemd's
``KillMode=control-group``) would otherwise end the tasks of the batch in flight (a worker
takes SIGTERM's default action; the daemon's handler ends itself and its workers). The driver
stops after that batch, and Spark then ends the daemon by closing its stdin (it sends SIGTERM
too), the daemon its workers by SIGHUP, and Spark a worker by SIGKILL. Blocked, not ignored:
pyspark sets the daemon's handler and the workers' default action for SIGTERM, not the mask,
which a fork and the threads a process starts inherit. The JVM: :mod:`segcompact.spark.jvm`.
"""

import signal

# Before any import: a thread started by one (pyarrow's) inherits the mask.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

import contextlib  # noqa: E402
import importlib  # noqa: E402

from pyspark.daemon import manager  # noqa: E402

PRELOADED = ("segcompact.spark.source", "segcompact.spark.materialize")

for _module in PRELOADED:
    # Whatever fails here, the daemon starts: the task that needs the module then reports it
    # (a daemon that dies before giving its port fails every Python task of the session).
    with contextlib.suppress(Exception):
        importlib.import_module(_module)

if __name__ == "__main__":
    manager()
