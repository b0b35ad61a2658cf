"""``segcompact health``: whether a job is running and well, for probes and operators.

Reads only what is cheap and needs no JVM: the lease files of the job's locations (renewed every
third of ``lease_timeout_ms`` by a live job, so a hung or dead one shows within the timeout),
the partitions table and the deletion ledger by delta-rs (:mod:`segcompact.delta.sql`), and
the source data not merged yet (:mod:`segcompact.unmerged`: listings and batch headers).
Each check passes or fails; ``--fail-on`` picks those that make the exit code 1 (a liveness
probe wants ``running`` alone: restarting fixes no uncleanable partition).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from segcompact.clock import epoch_ms
from segcompact.config import CompactorConfig
from segcompact.delta.sql import NoTable, SparkViews, open_sql
from segcompact.erasure.ledger_reads import ledger_rows
from segcompact.erasure.report import breached, build, iso, unread_breaches
from segcompact.erasure.unread import BREACHED, place
from segcompact.humanize import ago
from segcompact.lease import job_lease
from segcompact.unmerged import judged

CHECKS = ("running", "uncleanable", "breaches", "unverified")


_UNREAD_STATUS = {BREACHED: "breached (unread data past its deadline)"}


@dataclass(frozen=True)
class Health:
    running: str | None  # the live `segcompact run` holding the job's lease, described
    last_batch_ms: int | None  # the partitions table's newest update
    uncleanable: list[str]  # "topic-partition: reason"
    breaches: int  # deletions, erasure rounds and unread source data past their deadline
    # "topic-partition: status since …": source data not merged, a quarter of the SLA old or
    # more (unverified) or past it (breached, counted in breaches too)
    unverified: list[str] = field(default_factory=list)

    def failed(self) -> list[str]:
        """The checks that fail, in :data:`CHECKS` order."""
        failing = {
            "running": self.running is None,
            "uncleanable": bool(self.uncleanable),
            "breaches": self.breaches > 0,
            "unverified": bool(self.unverified),
        }
        return [name for name in CHECKS if failing[name]]

    def as_json(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "last_batch": iso(self.last_batch_ms),
            "uncleanable": self.uncleanable,
            "breaches": self.breaches,
            "unverified": self.unverified,
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
            f"partitions with source data not merged, unverified: {len(self.unverified)}",
            *(f"  {u}" for u in self.unverified),
        ]
        return "\n".join(lines)


def check(config: CompactorConfig, now_ms: int, spark: SparkViews) -> Health:
    """The job's health now (``now_ms``: the job's clock, for deadlines); ``spark`` is asked for
    Spark's SQL only when delta-rs cannot open a table."""
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
    unread = judged(config, sql, now_ms)
    report = build(deletes, rounds, config.sla_ms, now_ms, unread=unread)
    updates = [ms for r in rows if (ms := epoch_ms(r["updated_at"])) is not None]
    return Health(
        running=holders[0].describe() if holders else None,
        last_batch_ms=max(updates, default=None),
        uncleanable=[
            f"{r['topic']}-{r['partition']}: {r['uncleanable_reason']}"
            for r in rows
            if r["uncleanable_reason"] is not None
        ],
        breaches=len(breached(report)) + len(unread_breaches(report)),
        unverified=[
            f"{place(u)}: {_UNREAD_STATUS.get(u['status'], u['status'])}, not merged since "
            f"{u['unread_since'] or 'an unknown time'} ({u['location']}: {u['why']})"
            for u in report["unread"]
        ],
    )
