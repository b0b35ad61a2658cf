"""Whether ``materialize`` or ``purge`` has anything to do, read without a JVM: when nothing is
due they answer so in a second, where starting Spark to find it out takes thirty.

Read by delta-rs (:mod:`segcompact.delta.sql`) from the tables the job's own decisions read, and
decided by the same functions (``triggers.decision``, ``schedule.erasure_due``). What can only
be judged by Spark, or could not be read, counts as due: the command then starts Spark and
decides as it always has. Due, for the upkeep that both commands run first
(``Compactor.purge``, ``BatchMerger.settle``):

- young records of which one may be old enough to graduate (Spark decides which are);
- a tombstone in the state whose delete horizon has passed (it leaves the state);
- a partition whose materialisation triggers fire (``status``' ``due`` column);

and for ``purge``, on a job with a deletion SLA (``Eraser.run``):

- an erasure round still open (it advances, or says what it waits for);
- a partition's erasure mark that has fallen due, or that a written round took (it is cleared);
- a deletion whose tombstone has expired and whose key's erasure has fallen due.
"""

from __future__ import annotations

import logging
from typing import Any

from segcompact.compaction.triggers import decision
from segcompact.config import CompactorConfig
from segcompact.config.sla import smallest_sla_ms
from segcompact.delta.sql import DeltaSql, TableSql
from segcompact.erasure.ledger_reads import DELETE, ROUND, read_rows
from segcompact.erasure.schedule import erasure_due

log = logging.getLogger(__name__)


def nothing_due(
    config: CompactorConfig,
    now_ms: int,
    *,
    erasure: bool,
    topic: str | None = None,
    partition: int | None = None,
) -> bool:
    """True only when the tables, read by delta-rs, show nothing due at ``now_ms`` for
    ``materialize`` (of ``topic``/``partition`` when given) or, with ``erasure``, for
    ``purge``; False when something is, or when delta-rs cannot tell (a table it cannot open,
    one not created yet, a query it fails)."""
    erasure = erasure and smallest_sla_ms(config) is not None
    state = config.state
    views = {"partitions": state.partitions_table, "state": state.table, "young": state.young_table}
    if erasure:
        views["ledger"] = state.ledger_table
    sql = DeltaSql.open(views, config.storage)
    if sql is None:
        return False
    try:
        if _settle_due(sql, config, now_ms) or _materialize_due(
            sql, config, now_ms, topic, partition
        ):
            return False
        return not (erasure and _erasure_due(sql, config, now_ms))
    except Exception as e:  # NoTable, a DataFusion error: Spark decides, as without this path
        log.debug("nothing due? not known without Spark: %s", e)
        return False


def _rows(sql: TableSql, query: str) -> list[dict[str, Any]]:
    return read_rows(sql.query(query))  # timestamps as epoch ms


def _settle_due(sql: TableSql, config: CompactorConfig, now_ms: int) -> bool:
    # A young record graduates once older than its topic's min.compaction.lag.ms (and all before
    # it in its partition are): while even the oldest is younger than the smallest lag of any
    # topic, none can, as every record's segment is then at or past the first too-young one.
    (oldest,) = _rows(sql, 'SELECT min("timestamp") AS t FROM young')
    lags = [config.defaults, *config.topics.values()]
    smallest_lag = min(t.min_compaction_lag_ms for t in lags)
    if oldest["t"] is not None and oldest["t"] <= now_ms - smallest_lag:
        return True
    (horizon,) = _rows(sql, "SELECT min(delete_horizon) AS h FROM state WHERE tombstone")
    return horizon["h"] is not None and horizon["h"] <= now_ms


def _materialize_due(
    sql: TableSql,
    config: CompactorConfig,
    now_ms: int,
    topic: str | None,
    partition: int | None,
) -> bool:
    for r in sql.query("SELECT * FROM partitions").to_pylist():
        if topic is not None and r["topic"] != topic:
            continue
        if partition is not None and r["partition"] != partition:
            continue
        if decision(r, config, now_ms).reasons:
            return True
    return False


def _erasure_due(sql: TableSql, config: CompactorConfig, now_ms: int) -> bool:
    p = sql.quote("partition")
    (open_rounds,) = _rows(
        sql, f"SELECT count(*) AS n FROM ledger WHERE kind = '{ROUND}' AND completed_at IS NULL"
    )
    if open_rounds["n"]:
        return True
    taken = {
        (r["topic"], r["partition"], r["erasure_mark"])
        for r in _rows(
            sql,
            f"SELECT topic, {p}, erasure_mark FROM ledger "
            f"WHERE kind = '{ROUND}' AND erasure_mark IS NOT NULL",
        )
    }
    marks = _rows(
        sql, f"SELECT topic, {p}, erasure_from FROM partitions WHERE erasure_from IS NOT NULL"
    )
    for r in marks:
        if (r["topic"], r["partition"], r["erasure_from"]) in taken:
            return True  # cleared by the upkeep
        if _falls_due(config, r["topic"], r["erasure_from"], now_ms):
            return True
    expired = _rows(
        sql,
        f"SELECT topic, min(horizon) AS h FROM ledger WHERE kind = '{DELETE}' "
        "AND expiry_round IS NULL GROUP BY topic",
    )
    # Expired: the upkeep's expiry, just before, takes every horizon up to now.
    return any(
        r["h"] is not None and r["h"] <= now_ms and _falls_due(config, r["topic"], r["h"], now_ms)
        for r in expired
    )


def _falls_due(config: CompactorConfig, topic: str, appended_ms: int, now_ms: int) -> bool:
    sla = config.topic(topic).gdpr_deletion_sla_ms
    return sla is not None and erasure_due(appended_ms, sla, now_ms)
