"""What the end-to-end tests share: generated log dirs, config files, the CLI in a
subprocess, the streaming checkpoint and Delta logs read from disk, and the state and
partitions tables set beside the reference model.

The CLI runs on the system clock, so rows are compared without ``cleaned_at`` and
``delete_horizon``; :func:`check_horizons` holds those two to each other instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import random
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

import segcompact
from segcompact.backlog import QueryLog
from segcompact.config import CompactorConfig, load_config
from segcompact.delta.native import NativeReader
from segcompact.format.attributes import Compression
from segcompact.publication import Output, Publication
from segcompact.samples import generate_partition
from segcompact.storage import LocalInputFile, Storage
from tests.support import config as support_config
from tests.support.model import LogRecord, ReferenceModel, StateRow, read_log_records

RETENTION_MS = 3_600_000

# topic: (transactions, codec, [topics."<name>"] settings)
TOPICS: dict[str, tuple[bool, Compression, dict[str, str]]] = {
    "orders": (True, Compression.LZ4, {}),
    "users": (
        False,
        Compression.NONE,
        {"compaction.strategy": "timestamp", "compaction.tombstone.mode": "header"},
    ),
}

StateKey = tuple[str, int, bytes]
Partition = tuple[str, int]


# --- logs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Log:
    """A generated log dir: every partition's segment files, in offset order."""

    root: Path
    segments: dict[Partition, list[Path]]

    def rolled(self) -> dict[Partition, list[Path]]:
        """What ``rolled_only = true`` reads: all but each partition's active segment."""
        return {tp: paths[:-1] for tp, paths in self.segments.items()}

    def records(self, segments: Mapping[Partition, list[Path]]) -> list[LogRecord]:
        return [
            r
            for (topic, partition), paths in sorted(segments.items())
            for path in paths
            for r in read_log_records(LocalInputFile(path), topic, partition)
        ]


def write_log(
    root: Path,
    seed: int,
    *,
    topics: Iterable[str] = TOPICS,
    partitions: int = 2,
    **shape: Any,
) -> Log:
    """``generate_partition`` for each topic of :data:`TOPICS` and partition, under ``root``."""
    rnd = random.Random(seed)
    segments: dict[Partition, list[Path]] = {}
    for topic in topics:
        transactions, codec, _ = TOPICS[topic]
        for p in range(partitions):
            generated = generate_partition(rnd, transactions=transactions, codec=codec, **shape)
            assert len(generated) >= 2, "a partition needs a rolled segment and an active one"
            segments[(topic, p)] = [s.write(root / f"{topic}-{p}") for s in generated]
    return Log(root, segments)


# --- configuration --------------------------------------------------------------------------


def write_config(
    work: Path,
    sources: Iterable[Path],
    *,
    rolled_only: bool = True,
    stream: Mapping[str, object] | None = None,
    topics: Mapping[str, Mapping[str, str]] | None = None,
    base: str | None = None,
    spark: Mapping[str, str] | None = None,
) -> Path:
    """A config file with every location under ``base`` (``work`` when not given); returns its
    path."""
    return support_config.write_config(
        work,
        sources,
        rolled_only=rolled_only,
        stream=stream,
        defaults={"delete.retention.ms": RETENTION_MS},
        topics=topics if topics is not None else _topic_settings(),
        base=base,
        spark=spark,
    )


def _topic_settings() -> dict[str, dict[str, str]]:
    return {name: settings for name, (_, _, settings) in TOPICS.items() if settings}


# --- the CLI --------------------------------------------------------------------------------

CLI = (sys.executable, "-m", "segcompact.cli")
# A bound on a run that hangs, not a pass condition: the machine may be shared and slow.
RUN_TIMEOUT_S = 900


def cli_env(spark_conf_dir: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # The CLI imports the segcompact these tests import (a relative PYTHONPATH such as `src`
    # would not find it from the run's own working directory, and another would be run).
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(segcompact.__file__).parents[1])]
        + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    env["PYSPARK_PYTHON"] = sys.executable
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    env.pop("PYSPARK_GATEWAY_PORT", None)  # never attach to the test session's JVM
    if spark_conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(spark_conf_dir)
    else:
        env.pop("SPARK_CONF_DIR", None)
    return env


def run_cli(
    *args: str | os.PathLike[str],
    cwd: Path,
    spark_conf_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *map(str, args)],
        cwd=cwd,
        env={**cli_env(spark_conf_dir), **(env or {})},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def run_cli_on_a_terminal(
    *args: str | os.PathLike[str],
    cwd: Path,
    spark_conf_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """:func:`run_cli` with stderr on a pseudo-terminal, as a user at a shell has it: its
    ``stderr`` is what the terminal was sent (``\r\n`` line ends, progress bars redrawn)."""
    leader, follower = pty.openpty()
    # A terminal's size: a new pseudo-terminal has none (0 columns), and a bar fits in none.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    received: list[bytes] = []

    def drain() -> None:  # a full terminal buffer would block the process
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            [*CLI, *map(str, args)],
            cwd=cwd,
            env={**cli_env(spark_conf_dir), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    finally:
        os.close(follower)
        reader.join(timeout=RUN_TIMEOUT_S)
        os.close(leader)
    proc.stderr = b"".join(received).decode(errors="replace")
    return proc


class Background:
    """``segcompact`` in a process group of its own (the JVM and Python workers included),
    with stdout and stderr in files."""

    def __init__(
        self,
        *args: str | os.PathLike[str],
        cwd: Path,
        spark_conf_dir: Path | None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.stdout_path = cwd / "background.out"
        self.stderr_path = cwd / "background.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [*CLI, *map(str, args)],
                cwd=cwd,
                env={**cli_env(spark_conf_dir), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def kill_group(self) -> None:
        """SIGKILL to everything the run started, as an OOM killer or a lost node would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)

    def terminate(self) -> None:
        """SIGTERM to the segcompact process only, as ``kill PID`` or Kubernetes does."""
        self.proc.send_signal(signal.SIGTERM)

    def terminate_all(self) -> set[int]:
        """SIGTERM to every process the run started, as systemd's ``KillMode=control-group``
        sends it: the run's process group (segcompact, the JVM) and the processes that left
        it but not its session (Spark's Python daemon makes a group of its own, for its
        workers). Returns the processes signalled."""
        os.killpg(self.proc.pid, signal.SIGTERM)
        others = self.processes() - group_members(self.proc.pid)
        for pid in others:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        return others | {self.proc.pid}

    def processes(self) -> set[int]:
        """Every live process of the run's session (a zombie is not live)."""
        return {pid for pid, stat in _process_stats() if stat[3] == self.proc.pid}

    def wait(self) -> int:
        return self.proc.wait(timeout=RUN_TIMEOUT_S)

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        # Whatever happened, nothing the run started (the JVM, Python workers) outlives it.
        self.kill_group()


def group_members(pgid: int) -> set[int]:
    """The live processes of process group ``pgid``."""
    return {pid for pid, stat in _process_stats() if stat[2] == pgid}


def _process_stats() -> Iterable[tuple[int, tuple[str, int, int, int]]]:
    """(pid, (state, parent, process group, session)) of each live process, from /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path("/proc", entry, "stat").read_text()
        except OSError:  # it ended meanwhile
            continue
        # The command's name, in parentheses, may hold spaces and parentheses itself.
        state, parent, group, session = text[text.rindex(")") + 2 :].split()[:4]
        if state != "Z":
            yield int(entry), (state, int(parent), int(group), int(session))


def wait_for(
    what: str, condition: Callable[[], Any], *, running: Background, timeout_s: float = 600
) -> Any:
    """Poll ``condition`` until it returns a true value; fail if ``running`` exits first or the
    deadline passes. The deadline only bounds a hang: nothing passes by waiting."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = condition()
        if found:
            return found
        if not running.running():
            raise AssertionError(
                f"the run exited ({running.proc.returncode}) before {what}:\n{running.stderr()}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s:\n{running.stderr()[-4000:]}")
        time.sleep(0.05)


def wait_for_none(what: str, found: Callable[[], set[int]], *, timeout_s: float = 60) -> None:
    """Poll ``found`` until it is empty (``what`` names the wait); fail at the deadline, which
    only bounds a hang."""
    deadline = time.monotonic() + timeout_s
    while left := found():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s: {sorted(left)} left")
        time.sleep(0.05)


# --- what a run leaves on disk --------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """The streaming query's checkpoint: which batches were planned (offsets/N) and which
    finished (commits/N)."""

    folder: Path

    @classmethod
    def of(cls, config_path: Path) -> Checkpoint:
        return cls(Path(load_config(config_path).stream.checkpoint) / "query")

    def _batches(self, kind: str) -> set[int]:
        return set(QueryLog(str(self.folder), Storage()).batches(kind))

    def offsets(self) -> set[int]:
        return self._batches("offsets")

    def commits(self) -> set[int]:
        return self._batches("commits")

    def in_flight(self) -> set[int]:
        return self.offsets() - self.commits()


def delta_txn_versions(table: str | os.PathLike[str], app_id: str) -> set[int]:
    """The idempotent-write versions committed to a Delta table under ``app_id``."""
    log = Path(table) / "_delta_log"
    found: set[int] = set()
    try:
        names = os.listdir(log)
    except FileNotFoundError:
        return found
    for name in names:
        if not (name.endswith(".json") and name[:-5].isdigit()):
            continue
        try:
            lines = (log / name).read_text().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                action = json.loads(line)
            except ValueError:
                continue  # being written
            txn = action.get("txn")
            if txn and txn.get("appId") == app_id:
                found.add(int(txn["version"]))
    return found


# --- tables and the model -------------------------------------------------------------------

# State columns compared as they are; cleaned_at and delete_horizon are wall-clock times.
COMPARED = (
    "offset",
    "timestamp",
    "timestampType",
    "value",
    "headers",
    "order_value",
    "tombstone",
)


def _ms(value: Any) -> int | None:
    return None if value is None else round(value.timestamp() * 1000)


def _b(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


class _NoSpark:
    """Spark's place beside a delta-rs reader, for reads that must be delta-rs's: any use fails
    the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"delta-rs cannot do {name} on this table")


def delta_rs_rows(
    location: str, options: dict[str, str] | None = None, columns: list[str] | None = None
) -> pa.Table:
    """The live rows of the table at ``location`` (``columns`` of them), read by delta-rs."""
    return NativeReader(location, options or {}, _NoSpark()).arrow(columns)


def delta_rows(config: CompactorConfig, table: str) -> pa.Table:
    """Every live row of one of ``config``'s tables, read by delta-rs (no Spark; on S3 too)."""
    return delta_rs_rows(table, config.storage.delta_options(table))


def state_table(spark: SparkSession, config: CompactorConfig) -> dict[StateKey, dict[str, Any]]:
    """Every row of the state table, times in epoch milliseconds."""
    rows = spark.read.format("delta").load(config.state.table).collect()
    out = {}
    for r in rows:
        key = (r.topic, r.partition, bytes(r.key))
        assert key not in out, f"two state rows for {key}"
        out[key] = {
            "offset": r.offset,
            "timestamp": _ms(r.timestamp),
            "timestampType": r.timestampType,
            "value": _b(r.value),
            "headers": tuple((h.key, _b(h.value)) for h in r.headers),
            "order_value": r.order_value,
            "tombstone": r.tombstone,
            "delete_horizon": _ms(r.delete_horizon),
            "cleaned_at": _ms(r.cleaned_at),
        }
    return out


def native_state(config: CompactorConfig) -> dict[StateKey, dict[str, Any]]:
    """:func:`state_table`'s rows read by delta-rs instead of Spark (on S3 too)."""
    out = {}
    for r in delta_rows(config, config.state.table).to_pylist():
        key = (r["topic"], r["partition"], r["key"])
        assert key not in out, f"two state rows for {key}"
        out[key] = {
            "offset": r["offset"],
            "timestamp": _ms(r["timestamp"]),
            "timestampType": r["timestampType"],
            "value": r["value"],
            "headers": tuple((h["key"], h["value"]) for h in r["headers"]),
            "order_value": r["order_value"],
            "tombstone": r["tombstone"],
            "delete_horizon": _ms(r["delete_horizon"]),
            "cleaned_at": _ms(r["cleaned_at"]),
        }
    return out


def model_state(model: ReferenceModel) -> dict[StateKey, dict[str, Any]]:
    def row(s: StateRow) -> dict[str, Any]:
        return {
            "offset": s.offset,
            "timestamp": s.timestamp,
            "timestampType": s.timestamp_type,
            "value": s.value,
            "headers": s.headers,
            "order_value": s.order_value,
            "tombstone": s.tombstone,
            "delete_horizon": s.delete_horizon,
            "cleaned_at": s.cleaned_at,
        }

    return {k: row(v) for k, v in model.state.items()}


def without_times(rows: Mapping[StateKey, Mapping[str, Any]]) -> dict[StateKey, tuple[Any, ...]]:
    return {k: tuple(v[c] for c in COMPARED) for k, v in rows.items()}


def check_horizons(rows: Mapping[StateKey, Mapping[str, Any]], retention_ms: int) -> None:
    """A tombstone's horizon is the time of the merge that kept it plus delete.retention.ms
    (no generated batch carries a horizon of its own); other rows have none."""
    for key, row in rows.items():
        if row["tombstone"]:
            assert row["delete_horizon"] - row["cleaned_at"] == retention_ms, key
        else:
            assert row["delete_horizon"] is None, key


def pending_records(spark: SparkSession, config: CompactorConfig) -> set[tuple[str, int, int, int]]:
    """(topic, partition, producer id, offset) of the transactional records still undecided."""
    rows = (
        spark.read.format("delta")
        .load(config.state.pending_table)
        .where("NOT is_control")
        .collect()
    )
    return {(r.topic, r.partition, r.producer_id, r.offset) for r in rows}


def model_pending(model: ReferenceModel) -> set[tuple[str, int, int, int]]:
    return {
        (r.topic, r.partition, r.producer_id, r.offset)
        for records in model.pending.values()
        for r in records
    }


def partitions_table(spark: SparkSession, config: CompactorConfig) -> dict[Partition, Any]:
    rows = spark.read.format("delta").load(config.state.partitions_table).collect()
    return {(r.topic, r.partition): r for r in rows}


def publications(config: CompactorConfig) -> dict[Partition, Publication]:
    """Each partition's published output version, as its publication manifest has it."""
    output = Output(config.output.path, config.storage)
    out: dict[Partition, Publication] = {}
    for topic, partition in output.partitions():
        publication = output.latest(topic, partition)
        assert publication is not None, (topic, partition)
        out[(topic, partition)] = publication
    return out


def output_records(config: CompactorConfig) -> dict[Partition, list[tuple[Any, ...]]]:
    """The records of each partition's published output version, in offset order (on any file
    system the config's locations are on)."""
    output = Output(config.output.path, config.storage)
    return {
        (topic, partition): [
            (r.offset, r.key, r.value, r.headers)
            for f in sorted(publication.files, key=lambda f: f.name)
            if f.name.endswith(".log")
            for r in read_log_records(
                output.fs.input_file(output.join(publication.directory, f.name)), topic, partition
            )
        ]
        for (topic, partition), publication in publications(config).items()
    }


def model_output(model: ReferenceModel) -> dict[Partition, list[tuple[Any, ...]]]:
    """What a materialised partition holds: its state rows (tombstones too) by offset."""
    out: dict[Partition, list[tuple[Any, ...]]] = {}
    for (topic, partition, key), s in sorted(model.state.items(), key=lambda i: i[1].offset):
        out.setdefault((topic, partition), []).append((s.offset, key, s.value, s.headers))
    return out


def model_of(config: CompactorConfig, records: Iterable[LogRecord], now_ms: int) -> ReferenceModel:
    """The model after one micro-batch of ``records``; how the records were split into
    micro-batches does not change the state that is left, only the merge times."""
    model = ReferenceModel(config.topic)
    model.apply(records, now_ms)
    model.expire(now_ms)
    return model
