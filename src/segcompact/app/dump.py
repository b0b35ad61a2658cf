"""``segcompact dump``: segment and index files printed as kafka-dump-log.sh prints them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from segcompact.app.reply import Reply
from segcompact.dump import dump
from segcompact.errors import UsageError


def dump_files(
    files: Sequence[str],
    *,
    deep: bool,
    print_data: bool,
    index_sanity: bool,
    as_json: bool,
    out: TextIO,
) -> Reply:
    """Print ``files`` to ``out`` as they are read (a segment's batches can be millions)."""
    if not files:
        raise UsageError("dump: name the files to print (FILE… or --files F[,F…])")
    dump(
        list(files),
        deep=deep,
        print_data=print_data,
        index_sanity=index_sanity,
        as_json=as_json,
        out=out,
    )
    return Reply()
