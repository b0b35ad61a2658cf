"""A Spark standalone cluster on 127.0.0.1 for tests: a master and workers, each its own JVM
started by pyspark's own ``bin/spark-class``, each worker offering one core.

    with SparkCluster(tmp_path, workers=2) as cluster:
        config [spark] settings: cluster.spark_settings()

Ports are picked free at start; each JVM runs in a session of its own (the executors a worker
starts, and their Python workers, in the worker's), its output in ``<directory>/<name>.log``,
whose tail is in the error when the cluster does not come up. The workers' work directories
(each executor's ``stdout`` and ``stderr``) are ``<directory>/work-<n>``. The executors run the
Python of ``PYSPARK_PYTHON`` in the driver's environment and import what this process imports
(its ``PYTHONPATH``, given to the workers): the venv they share with the driver, as machines
of one image would share an install.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pyspark

import segcompact
from tests.support.ports import HOST, free_port
from tests.support.spark import JVM_OPTIONS

# A bound on a cluster that does not come up, not a pass condition.
_START_TIMEOUT_S = 180
_STOP_TIMEOUT_S = 30
_EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_class() -> Path:
    """pyspark's own ``bin/spark-class`` (the pip-installed Spark the driver runs)."""
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


class SparkCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each."""

    def __init__(
        self, directory: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"
    ) -> None:
        self.directory = directory
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.webui_port = free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.webui = f"http://{HOST}:{self.webui_port}"
        self._processes: list[subprocess.Popen[bytes]] = []

    def _env(self) -> dict[str, str]:
        src = str(Path(segcompact.__file__).parents[1])
        path = [src, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_class().parents[1]),
            "SPARK_LOCAL_IP": HOST,
            # The master's and workers' own heaps (a few small apps' bookkeeping) and JIT.
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS,
            # The executors' Python workers import this checkout's segcompact.
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(os.path.abspath(p) for p in path)),
        }
        for private in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "SPARK_CONF_DIR"):
            env.pop(private, None)
        return env

    def _launch(self, name: str, *args: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / f"{name}.log").open("wb") as log:
            self._processes.append(
                subprocess.Popen(
                    [str(spark_class()), *args],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self._env(),
                    cwd=self.directory,
                    start_new_session=True,
                )
            )

    def start(self) -> SparkCluster:
        """The master and workers started, once every worker is registered and alive; on any
        failure, every JVM started is ended before the error goes on."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> SparkCluster:
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", HOST, "--port", str(self.port), "--webui-port", str(self.webui_port)),
        )
        for n in range(self.workers):
            work = self.directory / f"work-{n}"
            work.mkdir(parents=True, exist_ok=True)
            self._launch(
                f"worker-{n}",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", HOST, "--webui-port", str(free_port())),
                *("--cores", str(self.cores), "--memory", self.memory),
                *("--work-dir", str(work)),
                self.url,
            )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._processes):
                break
            if len(self.alive_workers()) == self.workers:
                return self
            time.sleep(0.2)  # polling for registration; no result depends on this
        tails = "\n".join(
            f"--- {log.name}\n" + log.read_text(errors="replace")[-1500:]
            for log in sorted(self.directory.glob("*.log"))
        )
        raise RuntimeError(f"the Spark cluster at {self.url} did not come up:\n{tails}")

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers registered with the master and alive, from its JSON UI (none while it
        is not up: no answer, or while its web server starts, a broken or partial one)."""
        try:
            workers = self.state()["workers"]
        except (OSError, ValueError, KeyError, http.client.HTTPException):
            return []
        return [w for w in workers if w["state"] == "ALIVE"]

    def state(self) -> dict[str, Any]:
        """The master's view: workers, active and completed applications."""
        found: dict[str, Any] = get_json(f"{self.webui}/json")
        return found

    def stop(self) -> None:
        """Every JVM ended, with everything in its session (executors, Python workers)."""
        sessions = {p.pid for p in self._processes}
        for process in self._processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self._processes:
            try:
                process.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for pid in (pid for pid, _ in processes() if _session(pid) in sessions):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self._processes = []

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def spark_settings(self) -> dict[str, str]:
        """The ``[spark]`` settings of a job on this cluster, as small as the machine: a
        driver on loopback, executors of 512 MiB (one per worker, its one core), few shuffle
        partitions, no driver UI."""
        return {
            "spark.master": self.url,
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.executor.memory": "512m",
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "4",
            "spark.databricks.delta.snapshotPartitions": "2",
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        }

    def tasks_run(self) -> list[int]:
        """How many tasks each worker's executors have begun so far (all applications), from
        their logs in its work directory."""
        return [
            sum(
                log.read_text(errors="replace").count("Executor: Running task ")
                for log in (self.directory / f"work-{n}").glob("*/*/stderr")
            )
            for n in range(self.workers)
        ]

    def executors(self) -> dict[tuple[str, str], int]:
        """The live executor JVMs on this cluster's workers: (application id, executor id) to
        process id, from their command lines."""
        found = {}
        sessions = {p.pid for p in self._processes}
        for pid, argv in processes():
            if _EXECUTOR_CLASS in argv and _session(pid) in sessions:
                found[(_arg(argv, "--app-id"), _arg(argv, "--executor-id"))] = pid
        return found


def _arg(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, command line) of each process, from /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:  # it ended meanwhile
            continue
        yield int(entry), [os.fsdecode(a) for a in raw.split(b"\0") if a]


def _session(pid: int) -> int | None:
    """The session id of ``pid``, None once it has ended."""
    try:
        return os.getsid(pid)
    except ProcessLookupError:
        return None
