"""A real single-node Apache Kafka broker (KRaft, combined broker+controller) for tests.

Kafka is a test-only reference here: golden segments are written by it, and interop tests
compare segcompact with its log cleaner and its `DumpLogSegments`. Its jars and Java are found
by `tests.support.jvm`.

The broker binds 127.0.0.1 only, on ports picked at start. Its stdout/stderr go to
`<directory>/broker.log`; the tail of that file is in the error when it fails to start.

    with KafkaBroker(tmp_path) as broker:
        broker.create_topic("t", config={"cleanup.policy": "compact"})
        ...produce to broker.bootstrap...
    # stopped cleanly: segments are flushed under broker.partition_dir("t")
"""

from __future__ import annotations

import base64
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.jvm import KafkaError, classpath, java_executable, run_java_tool, tail
from tests.support.ports import HOST, free_port

NODE_ID = 1

_log = logging.getLogger(__name__)

# Settings a one-node cluster needs (internal topics default to replication 3) plus ones that
# keep tests fast. Callers' `properties` override any of these.
_BASE_PROPERTIES: dict[str, str] = {
    "process.roles": "broker,controller",
    "node.id": str(NODE_ID),
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
}

# Used when the classpath has a working SLF4J binding: reload4j (slf4j-reload4j) reads
# log4j.properties, log4j-slf4j-impl reads the log4j2 file. Both log to stdout, which goes to
# broker.log.
_LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.kafka.request.logger=WARN
"""
_LOG4J2_PROPERTIES = """\
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.stdout.ref=STDOUT
logger.clients.name=org.apache.kafka.clients
logger.clients.level=WARN
"""


class _BrokerExited(KafkaError):
    """Raised when the broker's JVM exits before it answers."""


_PORT_ATTEMPTS = 3
_NOP_LOGGING_HINT = (
    "(Kafka logged nothing: SLF4J has no working binding in the jars, e.g. slf4j-api 1.7 "
    "beside slf4j-reload4j 2.x; see jvm/kafka/pom.xml)"
)


def _client_logger(quiet: bool) -> logging.Logger:
    """Where librdkafka logs go. The quiet one drops them: while the broker boots, every
    metadata poll reports a refused connection."""
    if not quiet:
        return logging.getLogger(f"{__name__}.librdkafka")
    logger = logging.getLogger(f"{__name__}.librdkafka.startup")
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    return logger


def _kill(proc: subprocess.Popen[bytes]) -> None:
    # Last resort when a KafkaBroker is dropped without stop(): never leave a JVM behind.
    if proc.poll() is None:
        proc.kill()
        proc.wait()


class KafkaBroker:
    """A combined KRaft broker+controller (node 1) with `log.dirs` under `directory`.

    `properties` are extra server properties (they override the defaults), e.g. log cleaner
    tuning: `{"log.cleaner.backoff.ms": 100}`. `log_dir` defaults to `<directory>/data`.
    `fast_start` limits the JIT to C1, which halves start-up; a benchmark of the broker's own
    work wants False, the JIT a production broker runs with.
    The broker can be stopped and started again on the same directory; ports are new each
    start (the quorum uses static `controller.quorum.voters`, which allows that).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        properties: Mapping[str, object] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 120.0,
        stop_timeout: float = 60.0,
        heap: str = "512m",
        fast_start: bool = True,
    ) -> None:
        self.directory = Path(directory).resolve()
        self.log_dir = Path(log_dir).resolve() if log_dir else self.directory / "data"
        self.properties = {k: str(v) for k, v in (properties or {}).items()}
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.heap = heap
        self.fast_start = fast_start
        self.cluster_id: str | None = None
        self.port: int | None = None
        self.controller_port: int | None = None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._admin: Any = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    # -- paths and addresses ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """`127.0.0.1:<port>` of the PLAINTEXT listener (only valid while started)."""
        if self.port is None:
            raise KafkaError("broker not started")
        return f"{HOST}:{self.port}"

    @property
    def log_file(self) -> Path:
        """The broker's stdout and stderr."""
        return self.directory / "broker.log"

    @property
    def config_file(self) -> Path:
        return self.directory / "server.properties"

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        return self.log_dir / f"{topic}-{partition}"

    @property
    def pid(self) -> int:
        """The broker JVM's process id (only valid while started)."""
        if self._proc is None:
            raise KafkaError("broker not started")
        return self._proc.pid

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.stop()
        else:
            # Do not hide the original error behind a shutdown problem.
            try:
                self.stop()
            except KafkaError as stop_error:
                _log.warning("while handling %r: %s", exc, stop_error)

    def start(self) -> KafkaBroker:
        """Format storage if needed, start the broker and wait until it answers metadata."""
        if self.is_running():
            raise KafkaError("broker already running")
        java = java_executable()
        jars = classpath()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            self.port, self.controller_port = self._pick_ports()
            self._write_config()
            if not (self.log_dir / "meta.properties").exists():
                self._format()
            self._launch(java, jars)
            try:
                self._wait_ready(began + self.start_timeout)
                break
            except _BrokerExited:
                self._terminate(timeout=10.0)
                # free_port() cannot reserve a port: if another process took one between
                # picking and binding, pick again rather than fail.
                if attempt < _PORT_ATTEMPTS and self._ports_taken():
                    _log.warning("Kafka ports taken by another process; retrying")
                    continue
                raise
            except BaseException:
                self._terminate(timeout=10.0)
                raise
        self.startup_seconds = time.monotonic() - began
        _log.info("Kafka broker up at %s in %.1fs", self.bootstrap, self.startup_seconds)
        return self

    def stop(self) -> None:
        """SIGTERM and wait: Kafka's shutdown hook flushes and closes every segment.

        Raises KafkaError if the broker had to be killed or did not leave the clean
        shutdown marker (its segments may then hold unflushed or untrimmed data).
        """
        self._admin = None
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is not None:
            self._proc = None
            raise KafkaError(f"broker had already exited with {proc.returncode}\n{self._logtail()}")
        clean = self._terminate(timeout=self.stop_timeout)
        if not clean:
            raise KafkaError(
                f"broker did not stop within {self.stop_timeout}s and was killed\n{self._logtail()}"
            )
        if not (self.log_dir / ".kafka_cleanshutdown").exists():
            raise KafkaError(
                f"broker exited with {proc.returncode} without a clean shutdown marker in "
                f"{self.log_dir}\n{self._logtail()}"
            )

    def _terminate(self, timeout: float) -> bool:
        proc = self._proc
        self._proc = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if proc is None or proc.poll() is not None:
            return True
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return False

    # -- admin --------------------------------------------------------------------------------

    def admin(self) -> Any:
        """A confluent-kafka AdminClient on this broker (cached while it runs)."""
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient(self.client_config(logger=_client_logger(quiet=True)))
        return self._admin

    def client_config(self, **overrides: Any) -> dict[str, Any]:
        """Base confluent-kafka settings for this broker; librdkafka logs go to `logging`."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "broker.address.family": "v4",
            "reconnect.backoff.max.ms": 500,
            "logger": _client_logger(quiet=False),
        }
        config.update(overrides)
        return config

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, object] | None = None,
        timeout: float = 30.0,
    ) -> None:
        """Create a topic (replication 1) and wait until every partition has a leader."""
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        topic = NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=1,
            config={k: str(v) for k, v in (config or {}).items()},
        )
        futures = self.admin().create_topics([topic], operation_timeout=timeout)
        try:
            futures[name].result(timeout=timeout)
        except Exception as e:
            raise KafkaError(f"creating topic {name!r} failed: {e}") from e
        deadline = time.monotonic() + timeout
        while True:
            md = self.admin().list_topics(topic=name, timeout=timeout)
            parts = md.topics[name].partitions if name in md.topics else {}
            if len(parts) == partitions and all(p.leader == NODE_ID for p in parts.values()):
                return
            if time.monotonic() > deadline:
                raise KafkaError(f"topic {name!r} has no leader after {timeout}s")
            time.sleep(0.05)

    # -- internals ----------------------------------------------------------------------------

    def _pick_ports(self) -> tuple[int, int]:
        port = free_port()
        controller_port = free_port()
        while controller_port == port:
            controller_port = free_port()
        return port, controller_port

    def _write_config(self) -> None:
        props = dict(_BASE_PROPERTIES)
        props.update(
            {
                "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
                "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
                # Static voters rather than `--standalone`: a dynamic quorum stores the
                # controller's endpoint in the metadata log, so a restart could not take a
                # new port.
                "controller.quorum.voters": f"{NODE_ID}@{HOST}:{self.controller_port}",
                "log.dirs": str(self.log_dir),
            }
        )
        props.update(self.properties)
        text = "".join(f"{k}={_escape(v)}\n" for k, v in props.items())
        self.config_file.write_text(text, encoding="utf-8")
        (self.directory / "log4j.properties").write_text(_LOG4J_PROPERTIES, encoding="utf-8")
        (self.directory / "log4j2.properties").write_text(_LOG4J2_PROPERTIES, encoding="utf-8")

    def _format(self) -> None:
        self.cluster_id = _cluster_id()
        run_java_tool(
            "kafka.tools.StorageTool",
            "format",
            "--config",
            self.config_file,
            "--cluster-id",
            self.cluster_id,
            "--ignore-formatted",
            timeout=120.0,
        )

    def _launch(self, java: str, classpath: str) -> None:
        self._admin = None  # bound to the previous ports
        cmd = [
            java,
            f"-Xmx{self.heap}",
            "-Xss1m",
            "-XX:+UseG1GC",
            # Faster start; a test broker never gets hot.
            *(["-XX:TieredStopAtLevel=1"] if self.fast_start else []),
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={self.directory}",
            f"-Dlog4j.configuration=file:{self.directory / 'log4j.properties'}",
            f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
            "-cp",
            classpath,
            "kafka.Kafka",
            str(self.config_file),
        ]
        with open(self.log_file, "ab") as out:
            out.write(f"\n=== starting: {' '.join(cmd)}\n".encode())
            out.flush()
            self._proc = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.directory,
            )
        self._finalizer = weakref.finalize(self, _kill, self._proc)

    def _wait_ready(self, deadline: float) -> None:
        """Poll a metadata request until the broker lists itself, the JVM dies or time is up."""
        from confluent_kafka import KafkaException

        admin = self.admin()
        while time.monotonic() < deadline:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                code = None if proc is None else proc.returncode
                raise _BrokerExited(
                    f"Kafka broker exited with {code} during startup\n{self._logtail()}"
                )
            asked = time.monotonic()
            try:
                md = admin.list_topics(timeout=min(2.0, max(0.1, deadline - asked)))
                if NODE_ID in md.brokers:
                    return
            except KafkaException:
                pass
            # list_topics usually blocks for its timeout; never spin if it returns at once.
            time.sleep(max(0.0, 0.2 - (time.monotonic() - asked)))
        raise KafkaError(
            f"Kafka broker at {self.bootstrap} did not answer within {self.start_timeout}s\n"
            f"{self._logtail()}"
        )

    def _ports_taken(self) -> bool:
        for port in (self.port, self.controller_port):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                # Our own dead broker's connections may linger in TIME_WAIT: not "taken".
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind((HOST, port or 0))
                except OSError:
                    return True
        return False

    def _logtail(self, lines: int = 60) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return f"(no broker log at {self.log_file})"
        text = text[text.rfind("=== starting: ") :]  # this start only
        # Kafka logs a lot while shutting down after a fatal error: show the errors first.
        all_lines = text.splitlines()
        errors: list[str] = []
        for i, line in enumerate(all_lines):
            if (" ERROR " in line or " FATAL " in line) and len(errors) < 20:
                errors.append(line)
                # The exception's message is on the next line.
                if i + 1 < len(all_lines) and not all_lines[i + 1].startswith("["):
                    errors.append(all_lines[i + 1])
        shown = f"--- errors in {self.log_file} ---\n" + "\n".join(errors) + "\n" if errors else ""
        hint = f"\n{_NOP_LOGGING_HINT}" if "NOP) logger" in text else ""
        return f"{shown}--- tail of {self.log_file} ---\n{tail(text, lines)}{hint}"


def _escape(value: str) -> str:
    # java.util.Properties treats backslashes as escapes (Windows paths, regexes).
    return value.replace("\\", "\\\\")


def _cluster_id() -> str:
    """A random id in Kafka's Uuid text form (URL-safe base64 of 16 bytes, unpadded), never one
    that starts with ``-``, as Kafka's ``Uuid.randomUuid`` never makes: the storage tool's
    command line would take it for an option (1 run in 64 failed to format its broker)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
