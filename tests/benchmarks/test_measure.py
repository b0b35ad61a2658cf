"""What :func:`tests.benchmarks.measure.reap` counts of a process tree: a worker its parent
leaves to the kernel (PySpark's daemon ignores ``SIGCHLD``) still counts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.benchmarks.measure import REAP
from tests.support.jvm import REPO_ROOT

pytestmark = pytest.mark.benchmark

BURN_S = 1.0  # the worker's CPU seconds

# A parent that ignores SIGCHLD, as PySpark's daemon does, and a worker it forks that burns CPU:
# the kernel reaps the worker and adds its CPU to no one's RUSAGE_CHILDREN. The parent outlives
# the worker: the worker closes the pipe before it has exited, and a parent that exited then
# would hand it, still running, to the subreaper, which waits for it and so counts its CPU.
PARENT = f"""
    import os, signal, time
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    read, write = os.pipe()
    worker = os.fork()
    if worker == 0:
        os.close(read)
        start = time.process_time()
        while time.process_time() - start < {BURN_S}:
            pass
        os._exit(0)
    os.close(write)
    os.read(read, 1)  # the worker's end closes the pipe as it starts to exit
    while True:  # until the kernel has reaped it: exiting first would leave it to the subreaper
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.001)
"""


def test_a_worker_left_to_the_kernel_still_counts(tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    subprocess.run(
        [sys.executable, "-c", REAP, figures, sys.executable, "-c", textwrap.dedent(PARENT)],
        cwd=REPO_ROOT,
        check=True,
        timeout=120,
    )
    out = json.loads(figures.read_text())
    assert out["exit_code"] == 0
    assert out["kernel_cpu_s"] < BURN_S / 2, out  # the worker's CPU reached no parent
    assert out["polled_cpu_s"] > BURN_S / 2, out  # the poller saw it burn
    assert out["cpu_s"] == max(out["kernel_cpu_s"], out["polled_cpu_s"])
