"""The ``segcompact`` command line.

Every mistake the user can fix before a run (a bad argument, a missing file, a bad config, a
source root that does not exist) ends with one line on stderr and exit code 2; corrupt input, a
failed streaming query and other failures with one line and exit code 1.
No stack traces unless ``SEGCOMPACT_DEBUG`` is set.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from segcompact.errors import (
    ConfigError,
    CorruptBatchError,
    SegcompactError,
    UsageError,
    root_cause,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from tqdm import tqdm

    from segcompact.backlog import Backlog
    from segcompact.config import CompactorConfig
    from segcompact.lease import Lease
    from segcompact.metrics import JobMetrics

EXIT_DATA = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _dump(args: argparse.Namespace) -> int:
    from segcompact.dump import dump

    files = [*args.paths, *args.files]
    if not files:
        raise UsageError("dump: name the files to print (FILE… or --files F[,F…])")
    dump(
        files,
        deep=args.deep_iteration,
        print_data=args.print_data_log,
        index_sanity=args.index_sanity_check,
        as_json=args.format == "json",
        out=sys.stdout,
    )
    return 0


def _file_list(value: str) -> list[str]:
    """``--files``' comma-separated list, as kafka-dump-log.sh takes it."""
    return [f for f in value.split(",") if f]


def _load(path: str, *, writes: bool = False) -> CompactorConfig:
    """The config; for a command that ``writes`` the tables, also the ledger's secret when a
    topic has a deletion SLA (checked here, before Spark starts)."""
    from segcompact.config import load_config

    config = load_config(path)
    config.check_storage()
    if writes:
        from segcompact.config.sla import smallest_sla_ms
        from segcompact.erasure.keyhash import ledger_secret

        if smallest_sla_ms(config) is not None:
            ledger_secret(config.state.ledger_secret_file)
    return config


def _leased(config: CompactorConfig, command: str) -> Lease:
    """This job's lease on the locations it writes (``with``: taken before Spark starts, renewed
    while ``command`` runs): a second job is refused, and a lease lost meanwhile fails it."""
    from segcompact.lease import job_lease

    return job_lease(config, command)


# Where the JVM a command starts writes (Spark's log lines, the JVM's warnings): a file, so
# that segcompact's own lines stand alone on stderr; None (--verbose, SEGCOMPACT_DEBUG): stderr.
_jvm_output: str | None = None


def _session(config: CompactorConfig, *, long_running: bool = False) -> SparkSession:
    """The Spark session, with the config's ``[spark]`` settings."""
    from segcompact.spark.session import config_settings, get_spark

    settings = config_settings(config, long_running=long_running)
    return get_spark(
        conf=settings,
        jvm_output=_jvm_output,
        long_running=long_running,
        archive_classes=not long_running,
    )


def _spark_output_note() -> str:
    """Where to read what Spark said, for a failure's one line (once Spark has written)."""
    if _jvm_output is None or not os.path.exists(_jvm_output):
        return ""
    return f" (Spark's output: {_jvm_output})"


def _ensured(config: CompactorConfig) -> SparkSession:
    """The Spark session, the job's tables created if missing: a read-only command's way when
    delta-rs cannot read them (``segcompact.table_sql``)."""
    from segcompact.spark.tables import Tables

    spark = _session(config)
    Tables.of(config).ensure(spark)
    return spark


def _run(args: argparse.Namespace) -> int:
    if args.uncleanable_ok and not args.once:
        raise UsageError("--uncleanable-ok: only with --once (the continuous job does not exit)")
    config = _load(args.config, writes=True)
    from segcompact.discovery import check_roots

    check_roots(config.source.paths, config.storage)  # a typo'd root: exit 2 before Spark
    from segcompact.spark.job import Compactor, GracefulStop
    from segcompact.spark.jvm import stop_session

    # segcompact's own progress lines only: py4j's logger (which reports a refused batch with
    # a traceback) keeps its silence. A run --once is quiet but for its progress bar and its
    # summary line.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines() if args.log_format == "json" else _TextLines())
    logger = logging.getLogger("segcompact")
    logger.addHandler(handler)
    quiet = logging.WARNING if args.once else logging.INFO
    logger.setLevel(logging.DEBUG if args.verbose else quiet)
    logger.propagate = False
    metrics = _metrics(config)  # a port in use: exit 2 before Spark starts
    with _leased(config, "run") as lease:
        stop = GracefulStop()
        if not args.once:
            # Before Spark starts: its JVM ignores SIGTERM, and this process stops it.
            stop.install()
            lease.on_lost = stop.requested.set
        session = _session(config, long_running=not args.once)
        compactor = Compactor(session, config, metrics=metrics)
        if args.once:
            lease.on_lost = lambda: compactor.request_stop(trigger_active=False)
            backlog = compactor.backlog()
            with _progress(backlog.total) as bar:
                summary = compactor.run_once(
                    on_batch=lambda batch_id: _advance(bar, backlog, batch_id), backlog=backlog
                )
            print(summary.line())  # stdout: what a batch scheduler keeps
            failure = summary.failure()
            if failure is not None and not args.uncleanable_ok:
                print(f"segcompact: error: {failure} (--uncleanable-ok: exit 0)", file=sys.stderr)
                return EXIT_DATA
            return 0
        if not stop.requested.is_set():  # a stop while Spark started: no query
            stop.wait(compactor, compactor.start(once=False))
        stop_session(session)  # nothing of the job outlives it
    return 0


def _log_time(record: logging.LogRecord) -> str:
    """A log line's time: ISO-8601 UTC, to the millisecond."""
    from segcompact.humanize import iso_time

    return iso_time(round(record.created * 1000))


class _TextLines(logging.Formatter):
    """A line for people: ``<ISO time> segcompact: <logger>: <message>``."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{_log_time(record)} segcompact: {record.name}: {record.getMessage()}"


class _JsonLines(logging.Formatter):
    """One JSON object a line, for a cluster's log collector (``--log-format json``)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": _log_time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        return json.dumps(entry)


def _metrics(config: CompactorConfig) -> JobMetrics | None:
    """The job's metrics, served on ``[metrics]``'s port (the job gives them to Spark's metrics
    system with ``spark = true``); None when ``[metrics]`` asks for neither."""
    port = config.metrics.port
    if port is None and not config.metrics.spark:
        return None
    from segcompact.metrics import JobMetrics

    metrics = JobMetrics()
    if port is None:
        return metrics
    try:
        metrics.serve(config.metrics.host, port)
    except OSError as e:
        raise ConfigError(
            f"[metrics] port = {port}: cannot serve on {config.metrics.host}:{port}: "
            f"{e.strerror or e}"
        ) from None
    return metrics


def _progress(total: int) -> tqdm[Any]:
    """``run --once``'s progress bar, in bytes of segments, on a terminal (none when stderr is
    not one, as in a log)."""
    from tqdm import tqdm

    return tqdm(
        desc="segments",
        total=total,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        bar_format="{l_bar}{bar}| {n_fmt}B/{total_fmt}B [{elapsed}<{remaining}, {rate_fmt}]",
        file=sys.stderr,
        disable=None,
    )


def _advance(bar: tqdm[Any], backlog: Backlog, batch_id: int) -> None:
    """The bar at the end of micro-batch ``batch_id`` (segments rolled after the start, which
    the query reads too, raise its total)."""
    try:
        done = backlog.done(batch_id)
    except Exception as e:  # a progress bar never stops the job
        logging.getLogger("segcompact").debug("progress: %s", e)
        return
    if bar.total is not None and done > bar.total:
        bar.total = done
    bar.update(done - bar.n)


def _status(args: argparse.Namespace) -> int:
    config = _load(args.config)
    from segcompact.clock import job_clock
    from segcompact.ship.gaps import not_shipped
    from segcompact.status import read_status, skipped, text

    now = job_clock().now_ms()
    rows = read_status(config, now, lambda: _ensured(config))
    not_read = skipped(config)
    gaps = not_shipped(config.source.paths, config.storage)  # by segcompact ship
    if args.format == "json":
        print(json.dumps({"partitions": rows, "skipped": not_read, "not_shipped": gaps}, indent=2))
    else:
        print(text(rows, now, wide=args.wide, skipped=[*not_read, *gaps]))
    return 0


def _configs(args: argparse.Namespace) -> int:
    from segcompact.config import load_config
    from segcompact.config.describe import text
    from segcompact.format.logdir import is_topic_name

    config = load_config(args.config)
    for topic in args.topic or ():
        if not is_topic_name(topic):
            raise UsageError(f"--topic {topic!r}: not a Kafka topic name")
    unnamed = [t for t in args.topic or () if t not in config.topics]
    if unnamed:  # as kafka-configs.sh, a topic that does not exist is an error
        from segcompact.discovery import source_topics
        from segcompact.status import table_topics

        known = source_topics(config.source.paths, config.storage)
        if not set(unnamed) <= known:
            known |= table_topics(config, lambda: _ensured(config))
        for topic in unnamed:
            if topic not in known:
                raise UsageError(
                    f"--topic {topic!r}: no such topic (not in [topics], not in the job's "
                    f"tables, no {topic}-<partition> directory under [source] paths)"
                )
    topics: list[str | None] = [*(args.topic or sorted(config.topics))]
    print(text(config, topics if args.topic else [*topics, None]))
    return 0


def _checks(value: str) -> list[str]:
    from segcompact.health import CHECKS

    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in CHECKS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{value!r}: expected checks from {', '.join(CHECKS)}, comma-separated"
        )
    return names


def _health(args: argparse.Namespace) -> int:
    config = _load(args.config)
    from segcompact.clock import job_clock
    from segcompact.health import check

    now = job_clock().now_ms()
    health = check(config, now, lambda: _ensured(config))
    if args.format == "json":
        print(json.dumps(health.as_json(), indent=2))
    else:
        print(health.text(now))
    return EXIT_DATA if set(health.failed()) & set(args.fail_on) else 0


def _nothing_due(config: CompactorConfig, *, erasure: bool, **selection: Any) -> bool:
    """Whether delta-rs shows nothing due now, so that Spark need not start to find it out."""
    from segcompact.clock import job_clock
    from segcompact.due import nothing_due

    return nothing_due(config, job_clock().now_ms(), erasure=erasure, **selection)


def _materialize(args: argparse.Namespace) -> int:
    config = _load(args.config, writes=True)
    with _leased(config, "materialize"):
        if not args.force and _nothing_due(
            config, erasure=False, topic=args.topic, partition=args.partition
        ):
            print("nothing due")
            return 0
        from segcompact.spark.job import Compactor

        compactor = Compactor(_session(config), config)
        compactor.merger.settle(compactor.clock.now_ms())
        results = compactor.materializer.run(
            topic=args.topic, partition=args.partition, force=args.force
        )
    for r in results:
        print(
            f"{r['topic']}-{r['partition']}: version {r['version']}, {r['records']} records in "
            f"{r['segments']} segments ({r['bytes']} bytes); {', '.join(r['reasons'])}"
        )
    failed = compactor.materializer.failed  # now uncleanable: the others were published
    for (topic, partition), reason in sorted(failed.items()):
        print(f"segcompact: error: {topic}-{partition}: {reason}", file=sys.stderr)
    if not results and not failed:
        print("nothing due")
    return 1 if failed else 0


def _delete_records(args: argparse.Namespace) -> int:
    config = _load(args.config)
    from segcompact.compaction.delete_records import parse_offset_json

    path = args.offset_json_file
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    requests = parse_offset_json(text, path)
    from segcompact.clock import job_clock
    from segcompact.spark.delete_records import delete_records
    from segcompact.spark.tables import Tables

    with _leased(config, "delete-records"):
        spark = _session(config)
        tables = Tables.of(config)
        tables.ensure(spark)
        outcomes = delete_records(spark, tables, requests, job_clock().now_ms())
    print("Records delete operation completed:")
    for (topic, partition), o in sorted(outcomes.items()):
        result = f"low_watermark: {o.low_watermark}" if o.error is None else f"error: {o.error}"
        print(f"partition: {topic}-{partition}\t{result}")
    return EXIT_DATA if any(o.error for o in outcomes.values()) else 0


def _purge(args: argparse.Namespace) -> int:
    config = _load(args.config, writes=True)
    with _leased(config, "purge"):
        if not args.force and _nothing_due(config, erasure=True):
            print("nothing due")
            return 0
        from segcompact.spark.job import Compactor

        report = Compactor(_session(config), config).purge(force=args.force)
    if report.opened is not None:
        print(f"erasure round {report.opened} opened")
    for tp in report.partitions:
        print(f"{tp[0]}-{tp[1]}: in an open erasure round")
    for done in report.completed:
        print(f"erasure round {done} completed")
    for why in report.waiting:
        print(f"waiting: {why}")
    if report.opened is None and not (report.partitions or report.completed or report.waiting):
        print("nothing due")
    return 0


def _sla(args: argparse.Namespace) -> int:
    config = _load(args.config)
    from segcompact.clock import job_clock
    from segcompact.erasure.ledger_reads import ledger_rows, ledger_views
    from segcompact.erasure.report import build, text
    from segcompact.erasure.summary import scope
    from segcompact.table_sql import open_sql
    from segcompact.unmerged import judged

    views = {**ledger_views(config), "partitions": config.state.partitions_table}
    sql = open_sql(views, config.storage, lambda: _ensured(config))
    deletes, rounds = ledger_rows(sql)
    now = job_clock().now_ms()
    unread = judged(config, sql, now)
    # A record kept for later names every location in full, not from where it was run.
    full = config.with_base_dir(os.getcwd())
    upstream = _upstream(full, {(r["topic"], r["partition"]) for r in (*deletes, *rounds)})
    where = scope(full, os.path.abspath(args.config))
    report = build(deletes, rounds, config.sla_ms, now, upstream, where, unread)
    if args.format == "json":
        out = json.dumps(report, indent=2)
    elif args.format == "html":
        from segcompact.erasure.html import render_html

        out = render_html(report)
    else:
        out = text(report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(out + "\n")
    else:
        print(out)
    return 0


def _upstream(config: CompactorConfig, partitions: set[tuple[str, int]]) -> list[dict[str, str]]:
    """The source copies of the partitions with deletions: not segcompact's to erase."""
    note = (
        "source segments are not owned by segcompact: Kafka's retention and compaction (or "
        "whoever copied them) erase them"
    )
    storage = config.storage
    found = []
    for t, p in sorted(partitions):
        for root in config.source.paths:
            fs, path = storage.resolve(root)
            if fs.exists(fs.join(path, f"{t}-{p}")):
                found.append({"location": fs.join(path, f"{t}-{p}"), "note": note})
    return found


def _verify_erasure(args: argparse.Namespace) -> int:
    config = _load(args.config)
    import base64
    import binascii
    import dataclasses

    if args.key_b64 is not None:
        try:
            key = base64.b64decode(args.key_b64, validate=True)
        except binascii.Error:
            raise UsageError(f"--key-b64 {args.key_b64!r}: not base64") from None
    else:
        key = args.key.encode()
    from segcompact.clock import job_clock
    from segcompact.config import is_table_name
    from segcompact.config.model import LOCATION_KEYS
    from segcompact.erasure.keyhash import key_hash, ledger_secret
    from segcompact.erasure.ledger_reads import key_rows, key_views, partition_known
    from segcompact.erasure.report import iso
    from segcompact.erasure.scan import scan_for_key
    from segcompact.erasure.unread import findings
    from segcompact.erasure.verdict import proof, text
    from segcompact.table_sql import open_sql
    from segcompact.unmerged import cleared, unmerged

    secret = ledger_secret(config.state.ledger_secret_file)
    for section, name, table in LOCATION_KEYS:
        location = getattr(getattr(config, section), name)
        if table and is_table_name(location):
            raise UsageError(
                f"[{section}] {name} = {location!r} is a catalog name: verify-erasure reads "
                "the table's files and needs its path"
            )
    tp = f"{args.topic}-{args.partition}"
    sql = open_sql(key_views(config), config.storage, lambda: _ensured(config))
    sources = _upstream(config, {(args.topic, args.partition)})
    if not sources and not partition_known(sql, args.topic, args.partition):
        raise UsageError(
            f"{tp}: no such topic-partition: no row of it in the state, partitions or ledger "
            f"table, and no {tp} directory in [source] paths"
        )
    hashed = key_hash(secret, args.topic, args.partition, key)
    rows = key_rows(sql, args.topic, args.partition, key, hashed)
    result = scan_for_key(
        tables=list(config.state.tables()),
        outputs=[config.output.path],
        others=[config.stream.checkpoint],
        sources=list(config.source.paths),
        topic=args.topic,
        partition=args.partition,
        key=key,
        live_offsets=() if rows.current is None else (rows.current.offset,),
        storage=config.storage,
    )
    # Source data of the partition not merged that may hold the key: no complete proof.
    tp_only = unmerged(config, sql, lambda t, p: (t, p) == (args.topic, args.partition))
    read = cleared(config, result.read_whole, [f.location for f in result.upstream])
    shown = proof(
        topic=args.topic,
        partition=args.partition,
        key_hash=hashed,
        now=iso(job_clock().now_ms()),
        current=rows.current,
        ledger=rows.ledger,
        found=[
            *(dataclasses.asdict(f) for f in result.found),
            *findings(tp_only, args.topic, args.partition, iso, read),
        ],
        upstream=[dataclasses.asdict(f) for f in result.upstream],
        notes=result.notes,
    )
    print(json.dumps(shown, indent=2, default=str) if args.format == "json" else text(shown))
    return 0 if shown["proven"] else EXIT_DATA


def _export(args: argparse.Namespace) -> int:
    if not args.to.strip():
        raise UsageError("--to: empty path (name the folder to export into)")
    config = _load(args.config)
    from segcompact.export import export
    from segcompact.publication import Output

    config.storage.check("--to", args.to)
    done = export(
        Output(config.output.path, config.storage),
        args.to,
        config.storage,
        topic=args.topic,
        partition=args.partition,
    )
    for e in done:
        print(
            f"{e.topic}-{e.partition}: version {e.version}, {e.files} files "
            f"({e.bytes} bytes) -> {e.location}"
        )
    if not done:
        print("nothing published" + (" for that selection" if args.topic else ""))
    return 0


def _ship(args: argparse.Namespace) -> int:
    from segcompact.ship_command import ship

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines() if args.log_format == "json" else _TextLines())
    logger = logging.getLogger("segcompact")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if args.once else logging.INFO)
    logger.propagate = False
    result = ship(args.config, once=args.once)
    if result is not None:
        print(result.line())
        return EXIT_DATA if result.errors or result.damaged else 0
    return 0


def _demo(args: argparse.Namespace) -> int:
    from segcompact.demo import run_demo

    run_demo(args.config, args.workdir, out=sys.stdout, jvm_output=_jvm_output)
    return 0


def _version() -> str:
    """The installed distribution's version; "unknown" when segcompact runs uninstalled."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("segcompact")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="segcompact", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--version", action="version", version=f"segcompact {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = commands.add_parser(
        "dump", help="print the batches of segment or index files (kafka-dump-log.sh's flags)"
    )
    p.add_argument("paths", nargs="*", metavar="FILE")
    p.add_argument(
        "--files", type=_file_list, default=[], metavar="F[,F…]", help="as kafka-dump-log.sh"
    )
    p.add_argument("--deep-iteration", action="store_true", help="print every record too")
    p.add_argument(
        "--print-data-log", action="store_true", help="every record with its key and payload"
    )
    p.add_argument(
        "--index-sanity-check", action="store_true", help="check indexes instead of printing"
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_dump)

    p = commands.add_parser("run", help="the streaming compactor")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--once", action="store_true", help="process what is there, then exit")
    p.add_argument(
        "--uncleanable-ok",
        action="store_true",
        help="with --once: exit 0 even when a partition became uncleanable (its summary still "
        "names it)",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="log each step's time too, and Spark's output on stderr",
    )
    p.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="segcompact's own lines"
    )
    p.set_defaults(func=_run)

    p = commands.add_parser("materialize", help="re-materialise due partitions now")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--topic", metavar="T")
    p.add_argument("--partition", type=int, metavar="P")
    p.add_argument("--force", action="store_true", help="whether due or not")
    p.add_argument("--verbose", action="store_true", help="Spark's output on stderr too")
    p.set_defaults(func=_materialize)

    p = commands.add_parser("delete-records", help="move log start offsets forward (KIP-107)")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--offset-json-file", required=True, metavar="J")
    p.add_argument("--verbose", action="store_true", help="Spark's output on stderr too")
    p.set_defaults(func=_delete_records)

    p = commands.add_parser("status", help="per partition: offsets, dirty ratio, tombstones")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--wide", action="store_true", help="every field, however wide (text)")
    p.set_defaults(func=_status)

    p = commands.add_parser("configs", help="each topic's effective settings and their sources")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--describe", action="store_true", required=True)
    p.add_argument(
        "--topic",
        action="append",
        metavar="T",
        help="this topic (repeatable; default: those named in [topics])",
    )
    p.set_defaults(func=_configs)

    p = commands.add_parser("health", help="is the job running and well (for probes)")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument(
        "--fail-on",
        type=_checks,
        default="running,uncleanable,breaches,unverified",
        metavar="C[,C…]",
        help="the checks that make the exit code 1: running, uncleanable, breaches, unverified "
        "(default all; a liveness probe wants running)",
    )
    p.set_defaults(func=_health)

    p = commands.add_parser("purge", help="run the erasure work that is due (deletion SLA)")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--force", action="store_true", help="every pending erasure, due or not")
    p.add_argument("--verbose", action="store_true", help="Spark's output on stderr too")
    p.set_defaults(func=_purge)

    p = commands.add_parser("sla", help="deletion-SLA report: pending, met and breached erasures")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--format", choices=("text", "json", "html"), default="text")
    p.add_argument("--output", metavar="P", help="write the report here instead of stdout")
    p.set_defaults(func=_sla)

    p = commands.add_parser(
        "verify-erasure", help="one key's verdict: erased, pending, live, never seen or unknown"
    )
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--topic", required=True, metavar="T")
    p.add_argument("--partition", required=True, type=int, metavar="P")
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("--key", metavar="K", help="the key as UTF-8 text")
    key.add_argument("--key-b64", metavar="B", help="the key's bytes in base64")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_verify_erasure)

    p = commands.add_parser("export", help="copy published versions out as a Kafka log dir")
    p.add_argument("--config", required=True, metavar="F")
    p.add_argument("--to", required=True, metavar="DIR")
    p.add_argument("--topic", metavar="T")
    p.add_argument("--partition", type=int, metavar="P")
    p.set_defaults(func=_export)

    p = commands.add_parser("ship", help="copy a broker's rolled segments to a source root")
    p.add_argument("--config", required=True, metavar="F", help="a file with [ship]")
    p.add_argument("--once", action="store_true", help="one poll, then exit")
    p.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="segcompact's own lines"
    )
    p.set_defaults(func=_ship)

    p = commands.add_parser("demo", help="write sample segments and show what segcompact reads")
    p.add_argument("--config", default="conf/compactor.toml", metavar="F")
    p.add_argument("--workdir", help="put the config's local paths under this directory")
    p.add_argument("--verbose", action="store_true", help="Spark's output on stderr too")
    p.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    global _jvm_output
    args = build_parser().parse_args(argv)
    if not getattr(args, "verbose", False) and not os.environ.get("SEGCOMPACT_DEBUG"):
        import tempfile

        name = f"segcompact-{args.command}-{os.getpid()}.log"
        _jvm_output = os.path.join(tempfile.gettempdir(), name)
    try:
        code = int(args.func(args))
        if code == 0 and _jvm_output is not None:
            # Kept for a failure, whose one line names it; one file per run would pile up.
            with contextlib.suppress(FileNotFoundError):
                os.remove(_jvm_output)
        return code
    except (ConfigError, UsageError) as e:
        print(f"segcompact: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CorruptBatchError as e:
        print(f"segcompact: {e}", file=sys.stderr)
        return EXIT_DATA
    except SegcompactError as e:  # the job failed (a streaming query, a publication)
        print(f"segcompact: error: {e}{_spark_output_note()}", file=sys.stderr)
        return EXIT_DATA
    except BrokenPipeError:
        return 0
    except Exception as e:  # unforeseen (a Spark or I/O failure): one line, trace on request
        if os.environ.get("SEGCOMPACT_DEBUG"):
            raise
        print(
            f"segcompact: error: {type(e).__name__}: {root_cause(str(e))}{_spark_output_note()} "
            "(SEGCOMPACT_DEBUG=1 shows the trace)",
            file=sys.stderr,
        )
        return EXIT_DATA


if __name__ == "__main__":
    sys.exit(main())
