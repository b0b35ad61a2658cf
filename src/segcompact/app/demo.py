"""``segcompact demo``: sample segments, one full run with ``conf/compactor.toml``, a summary.

The samples go where the config's source points (``data/segments``), so after the demo
``segcompact run --config conf/compactor.toml`` and ``segcompact status`` work on them too.
``--workdir D`` puts everything the config names under ``D`` instead. A topic with a deletion
SLA needs the ledger's secret: unless ``SEGCOMPACT_LEDGER_SECRET`` is set, the demo writes a
random one into the file ``[state] ledger_secret_file`` names (``data/ledger.secret``, mode
0600) when it is missing, so that the commands it prints work in a new shell.

:func:`run_demo` yields the demo's lines as it goes, for its caller to print.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from segcompact.app.preconditions import lease
from segcompact.app.session import session
from segcompact.config import CompactorConfig, is_table_name, is_uri, load_config
from segcompact.erasure.keyhash import job_secret
from segcompact.errors import UsageError
from segcompact.format.attributes import Compression
from segcompact.lease import LEASE_DIR
from segcompact.samples import generate_partition

# topic: (codec, transactions); their compaction settings are in conf/compactor.toml.
DEMO_TOPICS = {
    "orders": (Compression.LZ4, False),
    "users": (Compression.ZSTD, False),
    "inventory": (Compression.SNAPPY, False),
    "sessions": (Compression.GZIP, False),
    "payments": (Compression.NONE, True),
}
PARTITIONS = 2
MARKER = ".segcompact-demo"


def _local(location: str) -> Path | None:
    return None if is_uri(location) or is_table_name(location) else Path(location)


def reset(config: CompactorConfig) -> Path:
    """Clear what an earlier demo wrote; return the (empty) sample root.

    Refuses to touch a sample root that the demo did not create.
    """
    root = _local(config.source.paths[0])
    if root is None:
        raise UsageError(f"the demo writes local files; {config.source.paths[0]} is not local")
    if root.exists() and not (root / MARKER).exists():
        raise UsageError(f"{root} exists and was not written by segcompact demo; not touching it")
    for location in config.owned():  # all but the demo's own lease
        path = _local(location)
        for child in path.iterdir() if path is not None and path.exists() else ():
            if child.name != LEASE_DIR:
                # A published partition is a link to its version directory: the link goes.
                is_tree = child.is_dir() and not child.is_symlink()
                shutil.rmtree(child) if is_tree else child.unlink()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    (root / MARKER).touch()
    return root


def write_samples(root: Path, now_ms: int, *, seed: int = 42) -> int:
    """Sample partitions in Kafka's log-dir layout under ``root``, written in the minute before
    ``now_ms``; return the segment count."""
    rnd = random.Random(seed)
    count = 0
    for topic, (codec, txn) in DEMO_TOPICS.items():
        for p in range(PARTITIONS):
            for seg in generate_partition(
                rnd, records=600, keys=40, codec=codec, transactions=txn, base_ms=now_ms - 60_000
            ):
                seg.write(root / f"{topic}-{p}")
                count += 1
    return count


def run_demo(config_path: str, workdir: str | None, *, jvm_output: str | None) -> Iterator[str]:
    """The demo, a line at a time."""
    config = load_config(config_path)
    if workdir is not None:
        config = config.with_base_dir(Path(workdir).resolve())
    from segcompact.config.sla import smallest_sla_ms
    from segcompact.erasure.keyhash import SECRET_VARIABLE, write_secret_file

    if smallest_sla_ms(config) is not None:  # before anything else is written or started
        secret_file = config.state.ledger_secret_file
        if (
            secret_file is not None
            and not os.environ.get(SECRET_VARIABLE)
            and write_secret_file(secret_file)
        ):
            yield f"wrote a new ledger secret to {secret_file} (mode 0600)"
    job_secret(config)
    with lease(config, "demo"):  # no other job writes these, nor loses them to reset
        yield from _run(config, config_path, workdir, jvm_output)


def _run(
    config: CompactorConfig, config_path: str, workdir: str | None, jvm_output: str | None
) -> Iterator[str]:
    from segcompact.clock import job_clock
    from segcompact.spark.job import Compactor
    from segcompact.spark.table_reader import SparkSql
    from segcompact.status import read_status

    root = reset(config)
    count = write_samples(root, job_clock().now_ms())
    yield f"wrote {count} segments of {len(DEMO_TOPICS)} topics under {root}"
    spark = session(config, jvm_output, app_name="segcompact-demo")
    compactor = Compactor(spark, config)
    compactor.run_once()
    rows = read_status(config, compactor.clock.now_ms(), partial(SparkSql, spark))
    yield f"compacted state (Delta table {config.state.table}):"
    for row in rows:
        yield (
            f"  {row['topic']}-{row['partition']}: offsets {row['log_start_offset']}.."
            f"{row['log_end_offset']}, {row['records']} records -> {row['keys']} keys kept "
            f"({row['tombstones_pending']} tombstones), {row['keyless_records']} keyless dropped"
        )
    yield f"re-materialised Kafka segments ({config.output.path}):"
    first_log = None
    output = compactor.materializer.output
    for row in rows:
        name = f"{row['topic']}-{row['partition']}"
        published = output.latest(row["topic"], row["partition"])
        if published is None:
            yield f"  {name}: not materialised"
            continue
        logs = sorted(f.name for f in published.files if f.name.endswith(".log"))
        # Through the partition's link, which a later version keeps naming the current files.
        first_log = first_log or output.join(name, logs[0])
        yield (
            f"  {output.join(name)}/ -> {published.directory}: version {published.version}, "
            f"{len(logs)} segment(s) with .index and .timeindex, "
            f"{sum(f.size for f in published.files)} bytes"
        )
    yield from _sla_report(compactor, config, config_path)
    for i, line in enumerate(next_steps(config_path, workdir, first_log)):
        yield f"{'next:' if i == 0 else '     '} {line}"


def next_steps(config_path: str, workdir: str | None, first_log: str | None) -> list[str]:
    """Commands to paste into a new shell opened where the demo ran. With ``--workdir``, they
    run in that folder (the config's relative paths name its files there), with absolute paths."""
    cli = segcompact_command(absolute=workdir is not None)
    config = shlex.quote(config_path if workdir is None else os.path.abspath(config_path))
    steps = [] if workdir is None else [f"cd {shlex.quote(os.path.abspath(workdir))}"]
    steps += [
        f"{cli} status --config {config}",
        f"{cli} sla --config {config} --format html --output sla.html",
    ]
    if first_log is not None:
        steps.append(f"{cli} dump {shlex.quote(first_log)} --print-data-log")
    return steps


def segcompact_command(*, absolute: bool) -> str:
    """How a shell runs this segcompact: the ``segcompact`` script beside the running Python
    (``.venv/bin/segcompact`` from the repository root), else that Python with ``-m``."""
    script = os.path.join(os.path.dirname(sys.executable), "segcompact")
    if not os.path.isfile(script):
        return f"{shlex.quote(sys.executable)} -m segcompact.cli"
    relative = os.path.relpath(script)
    if absolute or relative.startswith(os.pardir):
        return shlex.quote(os.path.abspath(script))
    return shlex.quote(relative if os.sep in relative else os.path.join(os.curdir, relative))


def _sla_report(compactor: Any, config: CompactorConfig, config_path: str) -> Iterator[str]:
    """Every pending erasure of the topics with ``gdpr.deletion.sla.ms`` done now (``purge
    --force``; the demo's tables keep no removed file), then the deletion-SLA report."""
    from segcompact.delta.sql import open_sql
    from segcompact.erasure.ledger_reads import ledger_rows, ledger_views
    from segcompact.erasure.report import build, text
    from segcompact.erasure.summary import scope
    from segcompact.spark.table_reader import SparkSql

    done = compactor.upkeep(force=True)
    yield f"erasure (purge --force): {len(done.completed)} round(s) completed"
    for why in done.waiting:
        yield f"  waiting: {why}"
    sql = open_sql(ledger_views(config), config.storage, partial(SparkSql, compactor.spark))
    deletes, rounds = ledger_rows(sql)
    now = compactor.clock.now_ms()
    report = build(deletes, rounds, config.sla_ms, now, scope=scope(config, config_path))
    yield "deletion SLA (gdpr.deletion.sla.ms):"
    for line in text(report).splitlines():
        yield f"  {line}"
