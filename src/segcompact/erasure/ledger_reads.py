"""What ``sla`` and ``verify-erasure`` read: the deletion ledger's rows and one key's rows, by
SQL (:mod:`segcompact.table_sql`: delta-rs without a JVM where it can open the tables).

Rows come out as dicts with times in epoch milliseconds (what :mod:`segcompact.erasure.report`
takes). The key ``verify-erasure`` is asked about is in a read's filter only, never in a commit;
delta-rs runs the query in this process and logs nothing of it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from segcompact.config import CompactorConfig
from segcompact.delta_native import sql_text
from segcompact.erasure.report import iso
from segcompact.table_sql import NoTable, TableSql

DELETE = "delete"
ROUND = "round"


def ledger_views(config: CompactorConfig) -> dict[str, str]:
    return {"ledger": config.state.ledger_table}


def key_views(config: CompactorConfig) -> dict[str, str]:
    state = config.state
    return {"state": state.table, "young": state.young_table, "ledger": state.ledger_table}


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


def key_rows(
    sql: TableSql, topic: str, partition: int, key: bytes, hashed: str
) -> tuple[set[int], list[dict[str, Any]]]:
    """One key's live offsets (its state row; the newest of its young rows, not yet compacted)
    and its ledger rows (by its hash), their times as ISO strings."""
    q = sql.quote
    where = f"topic = {sql_text(topic)} AND {q('partition')} = {int(partition)}"
    has_key = f"{where} AND {q('key')} = X'{key.hex()}'"
    try:
        live = {
            int(o)
            for o in sql.query(f"SELECT {q('offset')} FROM state WHERE {has_key}")
            .column(0)
            .to_pylist()
        }
        young = sql.query(f"SELECT max({q('offset')}) FROM young WHERE {has_key}").column(0)
        ledger = sql.query(f"SELECT * FROM ledger WHERE {where} AND key_hash = {sql_text(hashed)}")
    except NoTable:
        return set(), []
    if young[0].as_py() is not None:
        live.add(int(young[0].as_py()))
    times = {f.name for f in ledger.schema if pa.types.is_timestamp(f.type)}
    shown = [
        {k: iso(v) if k in times else v for k, v in r.items() if v is not None}
        for r in read_rows(ledger)
    ]
    return live, shown
