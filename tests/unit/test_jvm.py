"""What SIGTERM does to each process of a job, without Spark: the JVM's launch ignores it,
Spark's Python daemon and its workers block it (and the daemon still ends when Spark closes its
stdin), and the driver stops after the batch in flight, at once on a second one."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

from pyspark import java_gateway

import segcompact
from segcompact.spark.jvm import ignoring_sigterm

SRC = str(Path(segcompact.__file__).parents[1])
TIMEOUT_S = 120  # bounds a hang; nothing passes by waiting


def _python(code: str, **kwargs: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", textwrap.dedent(code)], env=env, **kwargs
    )


def _signals(status: str, field: str) -> set[signal.Signals]:
    """The signals of a /proc/PID/status text's ``field`` (SigIgn, SigBlk, SigCgt)."""
    for line in status.splitlines():
        name, _, mask = line.partition(":")
        if name == field:
            bits = int(mask, 16)
            return {s for s in signal.Signals if bits >> (s - 1) & 1}
    raise AssertionError(f"no {field} in {status}")


def _status(pid: int) -> str:
    return Path(f"/proc/{pid}/status").read_text()


# A child that prints its own /proc/PID/status.
REPORT = "import os; print(open(f'/proc/{os.getpid()}/status').read())"


def test_the_jvm_launch_ignores_sigterm_and_keeps_pysparks_own_preexec() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with ignoring_sigterm():
        child = java_gateway.Popen(
            [sys.executable, "-c", REPORT],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # pyspark's
        )
        out, _ = child.communicate(timeout=TIMEOUT_S)
        assert signal.getsignal(signal.SIGTERM) == before  # this process's own: untouched
    assert {signal.SIGTERM, signal.SIGINT} <= _signals(out, "SigIgn")
    assert java_gateway.Popen is subprocess.Popen  # later launches: as pyspark has them

    plain = subprocess.run(
        [sys.executable, "-c", REPORT], capture_output=True, text=True, check=True
    )
    assert signal.SIGTERM not in _signals(plain.stdout, "SigIgn")


def test_the_python_daemon_and_its_workers_outlive_sigterm_until_spark_ends_them() -> None:
    secret = b"worker secret"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "segcompact.spark.daemon", "pyspark.worker"],
        env={**os.environ, "PYTHONPATH": SRC, "PYTHON_WORKER_FACTORY_SECRET": secret.decode()},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert daemon.stdout is not None and daemon.stdin is not None
        (port,) = struct.unpack(">i", daemon.stdout.read(4))  # it runs pyspark's manager
        daemon.send_signal(signal.SIGTERM)  # pyspark's handler would end it and its workers
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
            stream = conn.makefile("rwb")
            (worker,) = struct.unpack(">i", stream.read(4))  # the daemon forked a worker
            assert signal.SIGTERM in _signals(_status(worker), "SigBlk")
            os.kill(worker, signal.SIGTERM)  # pyspark's worker takes its default action
            stream.write(struct.pack(">i", len(secret)) + secret)
            stream.flush()
            (length,) = struct.unpack(">i", stream.read(4))
            assert stream.read(length) == b"ok"  # the worker still answers
        daemon.stdin.close()  # how Spark ends the daemon (Process.destroy), which ends its workers
        daemon.wait(timeout=TIMEOUT_S)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def test_sigterm_asks_to_stop_and_a_second_one_ends_the_driver() -> None:
    child = _python(
        """
        import os, signal
        from segcompact.spark.job import GracefulStop
        stop = GracefulStop()
        stop.install()
        os.kill(os.getpid(), signal.SIGTERM)
        print(stop.requested.wait(60), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        print("still running", flush=True)
        """,
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = child.communicate(timeout=TIMEOUT_S)
    assert out == "True\n"
    assert child.returncode == -signal.SIGTERM
