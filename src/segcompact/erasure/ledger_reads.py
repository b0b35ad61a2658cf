"""What ``sla`` and ``verify-erasure`` read: the deletion ledger's rows and one key's rows, by
SQL (:mod:`segcompact.delta.sql`: delta-rs without a JVM where it can open the tables).

Rows come out as dicts with times in epoch milliseconds (what :mod:`segcompact.erasure.report`
takes). The key ``verify-erasure`` is asked about is in a read's filter only, never in a commit;
delta-rs runs the query in this process and logs nothing of it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from segcompact.config import CompactorConfig
from segcompact.delta.sql import NoTable, TableSql, sql_text
from segcompact.erasure.report import iso
from segcompact.erasure.verdict import Held

DELETE = "delete"
ROUND = "round"


def ledger_views(config: CompactorConfig) -> dict[str, str]:
    return {"ledger": config.state.ledger_table}


def key_views(config: CompactorConfig) -> dict[str, str]:
    state = config.state
    return {
        "state": state.table,
        "young": state.young_table,
        "ledger": state.ledger_table,
        "partitions": state.partitions_table,
    }


def read_rows(rows: pa.Table) -> list[dict[str, Any]]:
    """Ledger rows as dicts, their times as epoch milliseconds (None stays None) and
    ``table_versions`` as a dict."""
    millis = pa.timestamp("ms", tz="UTC")
    columns = {
        name: col.cast(millis, safe=False).cast(pa.int64())
        if pa.types.is_timestamp(col.type)
        else col
        for name, col in zip(rows.column_names, rows.columns, strict=True)
    }
    out: list[dict[str, Any]] = pa.table(columns).to_pylist()
    if "table_versions" in columns:
        for r in out:
            if r["table_versions"] is not None:
                r["table_versions"] = dict(r["table_versions"])
    return out


def ledger_rows(sql: TableSql) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every delete row (by partition and offset) and every round row (by partition and
    round); none before the job has created the ledger."""
    q = sql.quote
    by = f"topic, {q('partition')}"
    try:
        deletes = sql.query(
            f"SELECT * FROM ledger WHERE kind = '{DELETE}' ORDER BY {by}, {q('offset')}"
        )
        rounds = sql.query(
            f"SELECT * FROM ledger WHERE kind = '{ROUND}' ORDER BY {by}, {q('round')}"
        )
    except NoTable:
        return [], []
    return read_rows(deletes), read_rows(rounds)


@dataclass(frozen=True, slots=True)
class KeyRows:
    """What the tables hold of one key: ``current``, the newest of its state row and its young
    rows (not yet compacted); ``ledger``, its delete rows (times as ISO strings, None left
    out)."""

    current: Held | None
    ledger: list[dict[str, Any]]


def partition_known(sql: TableSql, topic: str, partition: int) -> bool:
    """Whether the partitions table, the state or the ledger has a row of ``topic``-``partition``
    (False before the job has created them)."""
    q = sql.quote
    where = f"topic = {sql_text(topic)} AND {q('partition')} = {int(partition)}"
    try:
        return any(
            sql.query(f"SELECT count(*) FROM {view} WHERE {where}").column(0)[0].as_py()
            for view in ("partitions", "state", "ledger")
        )
    except NoTable:
        return False


def key_rows(sql: TableSql, topic: str, partition: int, key: bytes, hashed: str) -> KeyRows:
    """One key's newest row (of the state and the young table) and its ledger rows (by its
    hash); nothing before the job has created the tables."""
    q = sql.quote
    where = f"topic = {sql_text(topic)} AND {q('partition')} = {int(partition)}"
    has_key = f"{where} AND {q('key')} = X'{key.hex()}'"
    held = f"SELECT {q('offset')}, tombstone FROM"
    rows: list[dict[str, Any]] = []
    # Each table on its own: one not created yet (the ledger of a job without an SLA) hides
    # nothing the others hold.
    for query in (
        f"{held} state WHERE {has_key}",
        f"{held} young WHERE {has_key} ORDER BY {q('offset')} DESC LIMIT 1",
    ):
        with contextlib.suppress(NoTable):
            rows += sql.query(query).to_pylist()
    newest = max(rows, key=lambda r: int(r["offset"]), default=None)
    current = None if newest is None else Held(int(newest["offset"]), bool(newest["tombstone"]))
    try:
        ledger = sql.query(
            f"SELECT * FROM ledger WHERE {where} AND key_hash = {sql_text(hashed)} "
            f"ORDER BY {q('offset')}"
        )
    except NoTable:
        return KeyRows(current, [])
    times = {f.name for f in ledger.schema if pa.types.is_timestamp(f.type)}
    shown = [
        {k: iso(v) if k in times else v for k, v in r.items() if v is not None}
        for r in read_rows(ledger)
    ]
    return KeyRows(current, shown)
