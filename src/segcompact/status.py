"""``segcompact status``: per partition, what the tables say about its compaction.

Three queries (:mod:`segcompact.delta.sql`): the partitions table, and per partition the state's
keys, tombstones and next horizon, and the young records. By delta-rs they take milliseconds and
no JVM; Spark answers them only for tables delta-rs cannot open. :func:`text` lays the rows out
for people (JSON keeps them as they are, times in epoch milliseconds). :func:`skipped` lists
the directories of the source roots that are not read (names Kafka would not write), by a
listing of the roots: nothing is stored about them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from segcompact.clock import epoch_ms
from segcompact.compaction.triggers import decision
from segcompact.config import CompactorConfig
from segcompact.delta.sql import NoTable, SparkViews, TableSql, open_sql
from segcompact.discovery import skipped_directories
from segcompact.humanize import ago, duration, iso_time, printable_path, until


def status_views(config: CompactorConfig) -> dict[str, str]:
    """The tables ``status`` reads, by the names its queries use."""
    state = config.state
    return {"state": state.table, "partitions": state.partitions_table, "young": state.young_table}


def read_status(config: CompactorConfig, now_ms: int, spark: SparkViews) -> list[dict[str, Any]]:
    """:func:`partition_status` by delta-rs, or by the SQL ``spark`` gives when delta-rs cannot
    open a table (only then is it asked for)."""
    return partition_status(open_sql(status_views(config), config.storage, spark), config, now_ms)


def table_topics(config: CompactorConfig, spark: SparkViews) -> set[str]:
    """The topics the job's partitions table holds (none before the job has created it)."""
    sql = open_sql({"partitions": config.state.partitions_table}, config.storage, spark)
    try:
        rows = sql.query("SELECT DISTINCT topic FROM partitions")
    except NoTable:
        return set()
    return {str(t) for t in rows.column("topic").to_pylist()}


def partition_status(sql: TableSql, config: CompactorConfig, now_ms: int) -> list[dict[str, Any]]:
    """One dict per (topic, partition), sorted; times in epoch milliseconds; none before the job
    has created its tables. ``due`` is the materialiser's own decision (``triggers.decision``)."""
    p = sql.quote("partition")
    try:
        partitions = sql.query(f"SELECT * FROM partitions ORDER BY topic, {p}").to_pylist()
        keys = _by_partition(
            sql.query(
                f"SELECT topic, {p}, count(*) AS key_count, "
                "count(CASE WHEN tombstone THEN 1 END) AS tombstones_pending, "
                f"min(delete_horizon) AS next_horizon FROM state GROUP BY topic, {p}"
            ).to_pylist()
        )
        young = _by_partition(
            sql.query(
                f"SELECT topic, {p}, count(*) AS young_records FROM young GROUP BY topic, {p}"
            ).to_pylist()
        )
    except NoTable:
        return []
    out = []
    for r in partitions:
        tp = (r["topic"], r["partition"])
        k, y = keys.get(tp, {}), young.get(tp, {})
        due = decision(r, config, now_ms)
        out.append(
            {
                "topic": r["topic"],
                "partition": r["partition"],
                "log_start_offset": r["log_start_offset"],
                "log_end_offset": r["log_end_offset"],
                "records": r["records"],
                "keys": k.get("key_count", 0),
                "dirty_bytes": r["dirty_bytes"],
                "clean_bytes": r["clean_bytes"],
                "dirty_ratio": round(due.dirty_ratio, 4),
                # Kafka's max-compaction-delay-secs, in ms: how far past max.compaction.lag.ms.
                "max_compaction_delay_ms": due.compaction_delay_ms,
                "due": ", ".join(due.reasons) or None,
                "tombstones_pending": k.get("tombstones_pending", 0),
                # Records kept raw, younger than min.compaction.lag.ms or after one that is.
                "young_records": y.get("young_records", 0),
                # When the state's next tombstone expires (the output's may differ: see due).
                "next_horizon_ms": epoch_ms(k.get("next_horizon")),
                "keyless_records": r["keyless_records"],
                "last_materialized_ms": epoch_ms(r["last_materialized_at"]),
                "uncleanable": r["uncleanable_reason"],
            }
        )
    return out


def skipped(config: CompactorConfig) -> list[dict[str, str]]:
    """Each directory of the source roots the job does not read, and why, its path printable."""
    return [
        {"path": printable_path(s.path), "reason": s.reason}
        for s in skipped_directories(config.source.paths, config.storage)
    ]


def _by_partition(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["topic"], r["partition"]): r for r in rows}


WIDTH = 120  # the text table's width without --wide: its last column is cut to fit


def text(
    rows: list[dict[str, Any]],
    now_ms: int,
    *,
    wide: bool = False,
    skipped: Sequence[dict[str, str]] = (),
) -> str:
    """:func:`partition_status`'s rows as a table for people: times as ISO-8601, ages and waits
    as durations. By default the columns an operator reads, each line at most :data:`WIDTH`
    (the free text of the last column cut with ``…``); ``wide``: every field, uncut. Then a
    line for each of :func:`skipped`'s directories."""
    notes = [f"skipped: {s['path']}: {s['reason']}" for s in skipped]
    if not rows:
        return "\n".join(["no partitions yet", *notes])
    table = [_wide(r) for r in rows] if wide else [_narrow(r, now_ms) for r in rows]
    columns = list(table[0])
    cells = [[_cell(r[c]) for c in columns] for r in table]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in [columns, *cells]
    ]
    if not wide:
        lines = [line if len(line) <= WIDTH else line[: WIDTH - 1] + "…" for line in lines]
    return "\n".join([*lines, *notes])


def _cell(value: Any) -> str:
    """One cell on one line (a reason may quote a message of several)."""
    return "-" if value is None else " ".join(str(value).split())


def _narrow(r: dict[str, Any], now_ms: int) -> dict[str, Any]:
    horizon, materialized = r["next_horizon_ms"], r["last_materialized_ms"]
    delay = r["max_compaction_delay_ms"]
    return {
        "partition": f"{r['topic']}-{r['partition']}",
        "records": r["records"],
        "keys": r["keys"],
        "dirty": f"{r['dirty_ratio']:.0%}",
        "delay": duration(delay) if delay else None,
        "tombstones": r["tombstones_pending"],
        "young": r["young_records"],
        "next horizon": None if horizon is None else until(horizon - now_ms),
        "materialized": None if materialized is None else ago(now_ms - materialized),
        # Last, cut to fit: an uncleanable partition is never due (Kafka's cleaner skips it).
        "due": f"UNCLEANABLE: {r['uncleanable']}" if r["uncleanable"] else r["due"],
    }


def _wide(r: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in r.items():
        if name in ("next_horizon_ms", "last_materialized_ms"):
            out[name[:-3]] = None if value is None else iso_time(value)
        elif name == "max_compaction_delay_ms":
            out[name[:-3]] = duration(value)
        else:
            out[name] = value
    return out
