"""The end of a JVM segcompact started: every Java object this process let go of is released
in the JVM before the JVM is told to exit (``spark/jvm.py`` ``end_jvm``, the end of
``stop_session``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.e2e.harness import cli_env
from tests.support.spark import JVM_OPTIONS

pytestmark = pytest.mark.spark

RELEASED = 2_000  # references let go of at once: py4j's worker sends them one at a time
TIMEOUT_S = 300  # bounds a hang; nothing passes by waiting

# pyspark's own gateway (the JVM a SparkContext talks to), without a SparkContext in it.
SCRIPT = """
    import json, sys, threading
    from py4j.clientserver import FinalizerWorker
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway
    from segcompact.spark.jvm import end_jvm

    gateway = launch_gateway(SparkConf().set("spark.driver.extraJavaOptions", sys.argv[1]))
    queue = gateway._gateway_client.finalizer_deque
    held = [gateway.jvm.java.lang.StringBuilder() for _ in range(int(sys.argv[2]))]
    ids = {o._target_id for o in held}
    seen = {}

    class Watched:  # the JVM's stdin: its end tells the JVM to exit
        def __init__(self, real):
            self.real = real

        def close(self):
            seen["unsent"] = sum(1 for task in queue if task[1:] and task[1] in ids)
            seen["workers"] = sum(
                t.is_alive() for t in threading.enumerate() if isinstance(t, FinalizerWorker)
            )
            self.real.close()

        def __getattr__(self, name):
            return getattr(self.real, name)

    gateway.proc.stdin = Watched(gateway.proc.stdin)
    del held  # a release each, queued for py4j's worker
    seen["queued"] = len(queue)
    seen["ended"] = end_jvm(gateway)
    seen["exit"] = gateway.proc.returncode
    print(json.dumps(seen))
"""


def test_every_release_reaches_the_jvm_before_it_is_told_to_exit() -> None:
    """py4j sends a "memory delete" per Java object let go of, from a thread of its own; one in
    flight when the JVM exited met a reset connection, logged with its traceback on the root
    logger (a SIGTERM'd ``run`` that ended 0). Here a backlog of releases is queued as the JVM
    is ended: all are sent, and py4j's worker has ended, before the JVM's stdin closes."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), JVM_OPTIONS, str(RELEASED)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["ended"] and seen["exit"] is not None, seen  # it waited for the JVM
    assert seen["queued"] > 0, seen  # the releases were still queued when the end began
    assert seen["unsent"] == 0 and seen["workers"] == 0, seen
    for trace in ("Traceback", "Exception while sending command", "ERROR"):
        assert trace not in result.stderr, result.stderr
