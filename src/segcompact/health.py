"""``segcompact health``: whether a job is running and well, for probes and operators.

Reads only what is cheap and needs no JVM: the lease files of the job's locations (renewed every
third of ``lease_timeout_ms`` by a live job, so a hung or dead one shows within the timeout),
and the partitions table and the deletion ledger by delta-rs (:mod:`segcompact.table_sql`).
Each check passes or fails; ``--fail-on`` picks those that make the exit code 1 (a liveness
probe wants ``running`` alone: restarting fixes no uncleanable partition).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from segcompact.clock import epoch_ms
from segcompact.config import CompactorConfig
from segcompact.erasure.ledger_reads import ledger_rows
from segcompact.erasure.report import breached, build, iso
from segcompact.humanize import ago
from segcompact.lease import job_lease
from segcompact.table_sql import NoTable, open_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHECKS = ("running", "uncleanable", "breaches")


@dataclass(frozen=True)
class Health:
    running: str | None  # the live `segcompact run` holding the job's lease, described
    last_batch_ms: int | None  # the partitions table's newest update
    uncleanable: list[str]  # "topic-partition: reason"
    breaches: int  # deletions and erasure rounds past their deadline

    def failed(self) -> list[str]:
        """The checks that fail, in :data:`CHECKS` order."""
        failing = {
            "running": self.running is None,
            "uncleanable": bool(self.uncleanable),
            "breaches": self.breaches > 0,
        }
        return [name for name in CHECKS if failing[name]]

    def as_json(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "last_batch": iso(self.last_batch_ms),
            "uncleanable": self.uncleanable,
            "breaches": self.breaches,
            "failed": self.failed(),
        }

    def text(self, now_ms: int) -> str:
        age = "" if self.last_batch_ms is None else f" ({ago(now_ms - self.last_batch_ms)})"
        lines = [
            f"running: {self.running or 'no: no live `segcompact run` holds the job lease'}",
            f"last batch: {iso(self.last_batch_ms) or 'none yet'}{age}",
            f"uncleanable partitions: {len(self.uncleanable)}",
            *(f"  {u}" for u in self.uncleanable),
            f"deletion SLA breaches: {self.breaches}",
        ]
        return "\n".join(lines)


def check(config: CompactorConfig, now_ms: int, spark: Callable[[], SparkSession]) -> Health:
    """The job's health now (``now_ms``: the job's clock, for deadlines); ``spark`` is asked for
    a session only when delta-rs cannot open a table."""
    holders = [h for h in job_lease(config, "health").live_holders() if h.command == "run"]
    state = config.state
    views = {"partitions": state.partitions_table, "ledger": state.ledger_table}
    sql = open_sql(views, config.storage, spark)
    p = sql.quote("partition")
    try:
        rows = sql.query(
            f"SELECT topic, {p}, uncleanable_reason, updated_at FROM partitions ORDER BY topic, {p}"
        ).to_pylist()
    except NoTable:
        rows = []
    deletes, rounds = ledger_rows(sql)
    report = build(deletes, rounds, config.sla_ms, now_ms)
    updates = [ms for r in rows if (ms := epoch_ms(r["updated_at"])) is not None]
    return Health(
        running=holders[0].describe() if holders else None,
        last_batch_ms=max(updates, default=None),
        uncleanable=[
            f"{r['topic']}-{r['partition']}: {r['uncleanable_reason']}"
            for r in rows
            if r["uncleanable_reason"] is not None
        ],
        breaches=len(breached(report)),
    )
