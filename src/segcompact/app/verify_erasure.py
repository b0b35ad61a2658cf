"""``segcompact verify-erasure``: one key's verdict (erased, pending, live, never seen or
unknown), with the proof: the ledger's rows, every copy found, what was not read."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json

from segcompact.app.preconditions import load, table_paths
from segcompact.app.reply import EXIT_DATA, Reply
from segcompact.app.session import ensured
from segcompact.app.upstream import upstream
from segcompact.clock import job_clock
from segcompact.delta.sql import open_sql
from segcompact.erasure.keyhash import job_secret, key_hash
from segcompact.erasure.ledger_reads import key_rows, key_views, partition_known
from segcompact.erasure.report import iso
from segcompact.erasure.scan import scan_for_key
from segcompact.erasure.unread import findings
from segcompact.erasure.verdict import proof, text
from segcompact.errors import UsageError
from segcompact.unmerged import cleared, unmerged


def verify_erasure(
    config_path: str,
    topic: str,
    partition: int,
    *,
    key: str | None,
    key_b64: str | None,
    as_json: bool,
    jvm_output: str | None,
) -> Reply:
    """The verdict on a key (``key`` as UTF-8 text, or its bytes in base64) in
    ``topic``-``partition``; exit code 1 unless it is proven."""
    config = load(config_path)
    if key_b64 is not None:
        try:
            raw = base64.b64decode(key_b64, validate=True)
        except binascii.Error:
            raise UsageError(f"--key-b64 {key_b64!r}: not base64") from None
    else:
        assert key is not None  # the parser asks for one of them
        raw = key.encode()
    secret = job_secret(config, always=True)
    assert secret is not None
    table_paths(config, "verify-erasure")
    tp = f"{topic}-{partition}"
    sql = open_sql(key_views(config), config.storage, ensured(config, jvm_output))
    sources = upstream(config, {(topic, partition)})
    if not sources and not partition_known(sql, topic, partition):
        raise UsageError(
            f"{tp}: no such topic-partition: no row of it in the state, partitions or ledger "
            f"table, and no {tp} directory in [source] paths"
        )
    hashed = key_hash(secret, topic, partition, raw)
    rows = key_rows(sql, topic, partition, raw, hashed)
    result = scan_for_key(
        tables=list(config.state.tables()),
        outputs=[config.output.path],
        others=[config.stream.checkpoint],
        sources=list(config.source.paths),
        topic=topic,
        partition=partition,
        key=raw,
        live_offsets=() if rows.current is None else (rows.current.offset,),
        storage=config.storage,
    )
    # Source data of the partition not merged that may hold the key: no complete proof.
    tp_only = unmerged(config, sql, lambda t, p: (t, p) == (topic, partition))
    read = cleared(config, result.read_whole, [f.location for f in result.upstream])
    shown = proof(
        topic=topic,
        partition=partition,
        key_hash=hashed,
        now=iso(job_clock().now_ms()),
        current=rows.current,
        ledger=rows.ledger,
        found=[
            *(dataclasses.asdict(f) for f in result.found),
            *findings(tp_only, topic, partition, iso, read),
        ],
        upstream=[dataclasses.asdict(f) for f in result.upstream],
        notes=result.notes,
    )
    out = json.dumps(shown, indent=2, default=str) if as_json else text(shown)
    return Reply((out,), code=0 if shown["proven"] else EXIT_DATA)
