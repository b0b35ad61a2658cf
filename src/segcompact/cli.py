"""The ``segcompact`` command line.

Every failure the user can fix (a bad argument, a missing file, a bad config) ends with one line
on stderr and exit code 2; corrupt input data with one line and exit code 1. No stack traces.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from segcompact.errors import CorruptBatchError, SegcompactError

EXIT_DATA = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _dump(args: argparse.Namespace) -> int:
    from segcompact.dump import dump

    dump(args.files, deep=args.deep_iteration, as_json=args.format == "json", out=sys.stdout)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from segcompact.demo import run_demo

    run_demo(args.workdir, out=sys.stdout)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="segcompact", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = commands.add_parser("dump", help="print the batches of segment or index files")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--deep-iteration", action="store_true", help="print every record too")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=_dump)

    p = commands.add_parser("demo", help="write sample segments and show what segcompact reads")
    p.add_argument("--workdir", default="demo", help="where to write (default: ./demo)")
    p.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CorruptBatchError as e:
        print(f"segcompact: {e}", file=sys.stderr)
        return EXIT_DATA
    except SegcompactError as e:
        print(f"segcompact: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
