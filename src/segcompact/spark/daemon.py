"""Spark's Python daemon (``spark.python.daemon.module``) with the code of segcompact's tasks
imported before it forks its workers, so that each worker does not import it again: the
source's decoder and reducer, the materialiser's reader and encoder (pyarrow, delta-rs).

Local sessions segcompact starts use it (``segcompact.spark.session``). Where an import fails
the daemon starts all the same: the task that needs the module then reports it.
"""

import contextlib
import importlib

from pyspark.daemon import manager

PRELOADED = ("segcompact.spark.source", "segcompact.spark.materialize")

for _module in PRELOADED:
    # Whatever fails here, the daemon starts: the task that needs the module then reports it
    # (a daemon that dies before giving its port fails every Python task of the session).
    with contextlib.suppress(Exception):
        importlib.import_module(_module)

if __name__ == "__main__":
    manager()
