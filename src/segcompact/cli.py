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
from typing import NoReturn

from segcompact.app.reply import EXIT_DATA, EXIT_USAGE, Reply
from segcompact.errors import (
    ConfigError,
    CorruptBatchError,
    SegcompactError,
    UsageError,
    root_cause,
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _say(reply: Reply) -> int:
    """Print what a command says; its exit code."""
    for line in reply.lines:
        print(line)
    for line in reply.errors:
        print(line, file=sys.stderr)
    return reply.code


def _dump(args: argparse.Namespace) -> int:
    from segcompact.app.dump import dump_files

    return _say(
        dump_files(
            [*args.paths, *args.files],
            deep=args.deep_iteration,
            print_data=args.print_data_log,
            index_sanity=args.index_sanity_check,
            as_json=args.format == "json",
            out=sys.stdout,
        )
    )


def _file_list(value: str) -> list[str]:
    """``--files``' comma-separated list, as kafka-dump-log.sh takes it."""
    return [f for f in value.split(",") if f]


# Where the JVM a command starts writes (Spark's log lines, the JVM's warnings): a file, so
# that segcompact's own lines stand alone on stderr; None (--verbose, SEGCOMPACT_DEBUG): stderr.
_jvm_output: str | None = None


def _spark_output_note() -> str:
    """Where to read what Spark said, for a failure's one line (once Spark has written)."""
    if _jvm_output is None or not os.path.exists(_jvm_output):
        return ""
    return f" (Spark's output: {_jvm_output})"


def _log_lines(log_format: str, level: int) -> None:
    """segcompact's own log lines on stderr, from ``level`` up (py4j's logger, which reports a
    refused batch with a traceback, keeps its silence)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines() if log_format == "json" else _TextLines())
    logger = logging.getLogger("segcompact")
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def _run(args: argparse.Namespace) -> int:
    from segcompact.app.run import run

    # A run --once is quiet but for its progress bar and its summary line.
    quiet = logging.WARNING if args.once else logging.INFO
    _log_lines(args.log_format, logging.DEBUG if args.verbose else quiet)
    return _say(
        run(
            args.config,
            once=args.once,
            uncleanable_ok=args.uncleanable_ok,
            jvm_output=_jvm_output,
        )
    )


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


def _status(args: argparse.Namespace) -> int:
    from segcompact.app.status import status

    as_json = args.format == "json"
    return _say(status(args.config, as_json=as_json, wide=args.wide, jvm_output=_jvm_output))


def _configs(args: argparse.Namespace) -> int:
    from segcompact.app.configs import describe

    return _say(describe(args.config, args.topic or [], jvm_output=_jvm_output))


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
    from segcompact.app.health import health

    as_json = args.format == "json"
    return _say(health(args.config, as_json=as_json, fail_on=args.fail_on, jvm_output=_jvm_output))


def _materialize(args: argparse.Namespace) -> int:
    from segcompact.app.materialize import materialize

    return _say(
        materialize(
            args.config,
            topic=args.topic,
            partition=args.partition,
            force=args.force,
            jvm_output=_jvm_output,
        )
    )


def _delete_records(args: argparse.Namespace) -> int:
    from segcompact.app.delete_records import delete_records

    return _say(delete_records(args.config, args.offset_json_file, jvm_output=_jvm_output))


def _purge(args: argparse.Namespace) -> int:
    from segcompact.app.purge import purge

    return _say(purge(args.config, force=args.force, jvm_output=_jvm_output))


def _sla(args: argparse.Namespace) -> int:
    from segcompact.app.sla import sla

    return _say(sla(args.config, form=args.format, output=args.output, jvm_output=_jvm_output))


def _verify_erasure(args: argparse.Namespace) -> int:
    from segcompact.app.verify_erasure import verify_erasure

    return _say(
        verify_erasure(
            args.config,
            args.topic,
            args.partition,
            key=args.key,
            key_b64=args.key_b64,
            as_json=args.format == "json",
            jvm_output=_jvm_output,
        )
    )


def _export(args: argparse.Namespace) -> int:
    from segcompact.app.export import export_to

    return _say(export_to(args.config, args.to, topic=args.topic, partition=args.partition))


def _ship(args: argparse.Namespace) -> int:
    from segcompact.app.ship import ship

    _log_lines(args.log_format, logging.WARNING if args.once else logging.INFO)
    return _say(ship(args.config, once=args.once))


def _demo(args: argparse.Namespace) -> int:
    from segcompact.app.demo import run_demo

    for line in run_demo(args.config, args.workdir, jvm_output=_jvm_output):
        print(line)
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
