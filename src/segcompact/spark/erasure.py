"""Erasure rounds: superseded and deleted values physically removed by their SLA's deadline.

A round takes every partition whose erasure is due (``erasure.schedule``): values superseded
since the partition's last round, and keys whose tombstone expired. It is opened with a target,
the version at that moment of each table that holds records (everything the round erases was
removed from the live snapshots at or before it), and then advanced by every upkeep until done:

1. **purged**: the files with deletion vectors, whose deleted rows are still in them, rewritten
   (``spark.purge``: what ``REORG … APPLY (PURGE)`` does, which fails on a cluster);
2. **materialized**: the round's partitions are re-materialised from the state (by the upkeep,
   ``spark.upkeep``, between :meth:`Eraser.advance` and :meth:`Eraser.complete`, in one pass
   with the partitions that are due);
3. **versions_removed**: every output version but the published one is removed, and checked
   gone (a failure is kept as the row's error and retried; past the deadline it is a breach);
4. **vacuumed**: VACUUM of every table (one serves every open round), and a check that it
   covered the target: Delta removes a file once ``delta.deletedFileRetentionDuration`` has
   passed since the commit that dropped it, by the wall clock, so the round waits until the
   target's commit (for deletion vectors, the purge's) is that old.

Each round has one ledger row per partition, and takes the partition's delete rows it covers;
when it completes, they get its stage times and their status. An upkeep writes all of that in
one ledger commit at its end (a round that completes in the upkeep that opened it is written
once), then clears the partitions' marks the new round took: a crash before the commit leaves
the marks, and the next upkeep opens the round again; a crash after it leaves marks the
written round names as its own (``erasure_mark``), which the next upkeep clears without
opening another round. The stages' times come from the injectable
clock; the coverage check uses the wall clock, as Delta's VACUUM does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from segcompact.clock import Clock, at_ms, epoch_ms
from segcompact.config import CompactorConfig
from segcompact.config.sla import retention_ms, smallest_sla_ms
from segcompact.delta.merge_sql import BY_PARTITION, RowsMerge
from segcompact.erasure.ledger_reads import DELETE, ROUND, read_rows
from segcompact.erasure.schedule import (
    EXPIRED,
    ROUND_STAGES,
    STAGES,
    Status,
    erasure_due,
    row_outcome,
)
from segcompact.humanize import duration
from segcompact.publication import Output
from segcompact.spark.frames import local_frame, local_rows
from segcompact.spark.ledger import rows_frame, upsert
from segcompact.spark.purge import purge_deleted_rows
from segcompact.spark.tables import LEDGER_SCHEMA, Tables
from segcompact.timing import timed

_DV = "delta.enableDeletionVectors"
# A round's mark cleared: the erasure clock of a partition it took, unless a later record
# restarted it (``s.since``: the clock the round saw; ``s.cleared``: null).
_CLEARED = RowsMerge(
    f"{BY_PARTITION} AND t.erasure_from = s.since", update={"erasure_from": "s.cleared"}
)

log = logging.getLogger(__name__)


@dataclass
class RoundReport:
    """What one upkeep's erasure did."""

    opened: int | None = None  # the round opened, if any
    partitions: list[tuple[str, int]] = field(default_factory=list)  # in open rounds
    completed: list[int] = field(default_factory=list)  # rounds that completed
    waiting: list[str] = field(default_factory=list)  # why an open round is not done yet


@dataclass
class Rounds:
    """The rounds an upkeep advances, from :meth:`Eraser.advance` to :meth:`Eraser.complete`:
    those the ledger holds open (``written``, and each as it was read) and those it opens now,
    with the partitions' marks the new ones take."""

    now: int = 0
    written: list[dict[str, Any]] = field(default_factory=list)
    read: list[dict[str, Any]] = field(default_factory=list)
    opened: list[dict[str, Any]] = field(default_factory=list)
    marks: dict[tuple[str, int], int] = field(default_factory=dict)
    report: RoundReport = field(default_factory=RoundReport)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.written + self.opened

    @property
    def erase(self) -> list[tuple[str, int]]:
        """The partitions to re-materialise for the rounds (with those that are due)."""
        todo = {(r["topic"], r["partition"]) for r in self.rows if r["materialized_at"] is None}
        return sorted(todo)


class Eraser:
    def __init__(
        self,
        spark: SparkSession,
        config: CompactorConfig,
        tables: Tables,
        output: Output,
        clock: Clock,
    ) -> None:
        self.spark = spark
        self.config = config
        self.tables = tables
        self.output = output
        self.clock = clock
        self.retention_ms = retention_ms(config) or 0
        self._last_round: int | None = None
        self._last_run: int | None = None
        # Per table, the version a VACUUM left with no removed file still on disk: another
        # VACUUM is needed only after a later commit (each costs seconds, whatever it finds).
        self._clean: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        return smallest_sla_ms(self.config) is not None

    def advance(self, *, expired_until: int | None, force: bool = False) -> Rounds:
        """An upkeep's erasure up to the re-materialisation: open a round if anything is due
        (``force``: anything pending) and purge the deleted rows for the rounds open.
        ``expired_until``: the time of the state's last expiry (``BatchMerger.expire``): every
        tombstone whose horizon is at or before it has left the state (None: none yet)."""
        if not self.enabled:
            return Rounds()
        now = self.clock.now_ms()
        # How long until the next run, guessed from the last two (what is due by then is due).
        ahead = 0 if self._last_run is None else now - self._last_run
        self._last_run = now
        with timed(log, "erasure open"):
            written = self._open_rounds()
            opened, marks = self._open(now, force, ahead, expired_until)
        rounds = Rounds(now, written, [dict(r) for r in written], opened, marks)
        if opened:
            rounds.report.opened = opened[0]["round"]
        if not rounds.rows:
            self._clear_marks(marks)  # those a crash left after their round was written
            rounds.marks = {}
            return rounds
        rounds.report.partitions = sorted({(r["topic"], r["partition"]) for r in rounds.rows})
        with timed(log, "erasure purge"):
            self._purge(rounds.rows, now)
        return rounds

    def complete(self, rounds: Rounds, materialized: list[dict[str, Any]]) -> RoundReport:
        """The rest of the upkeep's erasure, once the rounds' partitions are re-materialised
        (``materialized``: the materialiser's results): old output versions removed, VACUUM,
        the rounds' progress in one ledger commit, then the marks the new rounds took
        cleared."""
        report = rounds.report
        if not rounds.rows:
            return report
        self._materialized(rounds.rows, materialized)
        with timed(log, "erasure remove versions"):
            self._remove_versions(rounds.rows)
        with timed(log, "erasure vacuum"):
            self._vacuum(rounds.rows, report)
        now = self.clock.now_ms()
        for r in rounds.rows:
            result = row_outcome(r, ROUND_STAGES, now)
            r.update(
                status=result.status,
                breach_stage=result.breach_stage,
                completed_at=result.completed_ms,
            )
        changed = [r for r, was in zip(rounds.written, rounds.read, strict=True) if r != was]
        changed += rounds.opened
        for r in changed:
            r["updated_at"] = now
        with timed(log, "erasure ledger"):
            self._record(changed, rounds.opened, now)
        # Last: a crash before this leaves the marks, and the next round takes them again.
        self._clear_marks(rounds.marks)
        done = {r["round"] for r in rounds.rows if r["completed_at"] is not None}
        open_ = {r["round"] for r in rounds.rows if r["completed_at"] is None}
        report.completed = sorted(done - open_)
        return report

    # -- opening -----------------------------------------------------------------------------

    def _open(
        self, now: int, force: bool, ahead: int, expired_until: int | None
    ) -> tuple[list[dict[str, Any]], dict[tuple[str, int], int]]:
        """Open a round for every partition whose erasure is due, or falls due within
        ``ahead`` ms: its new rows (none if nothing is due), written when the upkeep records
        its progress, and the partitions' marks it takes (cleared once it is written)."""
        due: dict[tuple[str, int], tuple[int, int]] = {}  # (appended, deadline) per partition

        def add(topic: str, partition: int, appended: int) -> None:
            sla = self.config.topic(topic).gdpr_deletion_sla_ms
            if sla is None or not (force or erasure_due(appended, sla, now, ahead)):
                return
            a, d = due.get((topic, partition), (appended, appended + sla))
            due[(topic, partition)] = (min(a, appended), min(d, appended + sla))

        marks, taken = {}, self._taken_marks()
        for r in read_rows(
            self.tables.partitions.reader(self.spark).arrow(
                ["topic", "partition", "erasure_from"],
                pc.field("erasure_from").is_valid(),
            )
        ):
            tp = (r["topic"], r["partition"])
            marks[tp] = r["erasure_from"]
            if (*tp, r["erasure_from"]) not in taken:
                add(*tp, r["erasure_from"])
        stale = {tp: ms for tp, ms in marks.items() if (*tp, ms) in taken}
        for r in read_rows(self._expired(expired_until)):
            add(r["topic"], r["partition"], r["horizon_min"])
        if not due:
            return [], stale
        # What the round must see vacuumed: not the partitions table or the ledger, which hold
        # no key or value (their latest commits, just before, would hold the round a cycle).
        target = {
            n: t.reader(self.spark).version() for n, t in self.tables.holding_records().items()
        }
        round_id = self._next_round()
        blank = dict.fromkeys(LEDGER_SCHEMA.fieldNames())
        rows = [
            {
                **blank,
                "kind": ROUND,
                "topic": t,
                "partition": p,
                "appended_at": appended,
                "deadline": deadline,
                "round": round_id,
                "table_versions": target,
                "status": Status.PENDING,
                "erasure_mark": marks.get((t, p)),
                # Not a column: the tombstones it erases the keys of, those expired by then.
                "expired_until": expired_until,
            }
            for (t, p), (appended, deadline) in sorted(due.items())
        ]
        return rows, {**stale, **{k: v for k, v in marks.items() if k in due}}

    def _taken_marks(self) -> set[tuple[str, int, int]]:
        """The partitions' marks rounds have taken: (topic, partition, epoch ms)."""
        rows = self.tables.ledger.reader(self.spark).arrow(
            ["topic", "partition", "erasure_mark"],
            (pc.field("kind") == ROUND) & pc.field("erasure_mark").is_valid(),
        )
        return {(r["topic"], r["partition"], r["erasure_mark"]) for r in read_rows(rows)}

    def _next_round(self) -> int:
        """The next round's id: one more than the ledger's newest (read once, then counted:
        one writer at a time)."""
        if self._last_round is None:
            last = pc.max(self.tables.ledger.reader(self.spark).arrow(["round"]).column("round"))
            self._last_round = last.as_py() or 0
        self._last_round += 1
        return self._last_round

    def _expired(self, until: int | None) -> pa.Table:
        """Per partition, the earliest horizon (``horizon_min``) of its delete rows whose
        tombstone has left the state (its horizon at or before ``until``) and whose key is not
        yet erased."""
        if until is None:
            until = -1  # nothing expired yet: before every horizon
        rows = self.tables.ledger.reader(self.spark).arrow(
            ["topic", "partition", "horizon"],
            (pc.field("kind") == DELETE)
            & (pc.field("horizon") <= pa.scalar(until * 1000, pa.timestamp("us", tz="UTC")))
            & pc.field("expiry_round").is_null(),
        )
        return rows.group_by(["topic", "partition"]).aggregate([("horizon", "min")])

    def _clear_marks(self, marks: dict[tuple[str, int], int]) -> None:
        if not marks:
            return
        source = local_rows(
            [(t, p, at_ms(ms), None) for (t, p), ms in marks.items()],
            "topic string, partition int, since timestamp, cleared timestamp",
        )
        self.tables.partitions.merge_rows(self.spark, source, _CLEARED)

    # -- advancing ---------------------------------------------------------------------------

    def _open_rounds(self) -> list[dict[str, Any]]:
        where = (pc.field("kind") == ROUND) & pc.field("completed_at").is_null()
        return read_rows(self.tables.ledger.reader(self.spark).arrow(where=where))

    def _purge(self, rounds: list[dict[str, Any]], now: int) -> None:
        """Rewrite the files with deletion vectors: their deleted rows are still in them. The
        rewritten files leave the snapshot in the purge's commit, which VACUUM must then cover:
        it becomes the round's target for that table (with nothing to purge, the version read,
        which covers the files a compaction rewrote since the round opened)."""
        todo = [r for r in rounds if r["purged_at"] is None]
        if not todo:
            return
        for name, table in self.tables.holding_records().items():
            if table.reader(self.spark).properties().get(_DV, "false").lower() == "true":
                purged = purge_deleted_rows(self.spark, table)
                for r in todo:
                    r["table_versions"] = {**r["table_versions"], name: purged}
        for r in todo:
            r["purged_at"] = now

    def _materialized(
        self, rounds: list[dict[str, Any]], materialized: list[dict[str, Any]]
    ) -> None:
        results = {(x["topic"], x["partition"]): x for x in materialized}
        now = self.clock.now_ms()
        for r in rounds:
            done = results.get((r["topic"], r["partition"]))
            if r["materialized_at"] is None and done is not None:
                r["materialized_at"] = now
                r["output_version"] = done["version"]
            elif r["materialized_at"] is None:
                r["error"] = "not re-materialised: the partition's input is uncleanable"

    def _remove_versions(self, rounds: list[dict[str, Any]]) -> None:
        todo = [r for r in rounds if r["materialized_at"] and r["versions_removed_at"] is None]
        if not todo:
            return
        for r in todo:
            left = self.output.remove_superseded(r["topic"], r["partition"])
            if left:
                r["error"] = "old output versions could not be removed: " + "; ".join(left)
            else:
                r["versions_removed_at"] = self.clock.now_ms()
                r["error"] = None

    def _vacuum(self, rounds: list[dict[str, Any]], report: RoundReport) -> None:
        if all(r["vacuumed_at"] is not None for r in rounds):
            return
        wall = time.time_ns() // 1_000_000
        covered: dict[str, int] = {}
        for name, table in self.tables.all().items():
            before = table.reader(self.spark)
            last = before.version()
            if self._clean.get(name) == last:
                covered[name] = last  # nothing committed since a VACUUM left it clean
                continue
            since = min(
                (r["table_versions"].get(name, last) for r in rounds if r["vacuumed_at"] is None),
                default=last,
            )
            if self.retention_ms == 0:
                _after(before.commit_times(last)[last])  # the cutoff is after it
                wall = max(wall, time.time_ns() // 1_000_000)
            table.vacuum(self.spark)
            cutoff = wall - self.retention_ms
            after = table.reader(self.spark)  # VACUUM logs commits of its own
            times = after.commit_times(since)
            covered[name] = max((v for v, ms in times.items() if ms < cutoff), default=since - 1)
            if covered[name] >= last:
                self._clean[name] = after.version()
        now = self.clock.now_ms()
        for r in rounds:
            if r["vacuumed_at"] is not None:
                continue
            short = [t for t, v in r["table_versions"].items() if covered.get(t, -1) < v]
            if short:
                report.waiting.append(
                    f"round {r['round']} {r['topic']}-{r['partition']}: VACUUM cannot yet remove "
                    f"the files of {', '.join(short)} (delta.deletedFileRetentionDuration = "
                    f"{duration(self.retention_ms)} since their commit has not passed)"
                )
            else:
                r["vacuumed_at"] = now

    # -- completing --------------------------------------------------------------------------

    def _record(
        self, changed: list[dict[str, Any]], opened: list[dict[str, Any]], now: int
    ) -> None:
        """One commit: the round rows opened or changed in this upkeep, and the delete rows
        they change (:meth:`_delete_updates`)."""
        if not changed:
            return
        source = rows_frame(self.spark, changed)
        finished = [r for r in changed if r["completed_at"] is not None]
        if opened or finished:
            source = source.unionByName(self._delete_updates(opened, finished, now))
        upsert(self.spark, self.tables.ledger, source)

    def _delete_updates(
        self, opened: list[dict[str, Any]], finished: list[dict[str, Any]], now: int
    ) -> DataFrame:
        """The delete rows that rounds of this upkeep change, whole, judged on the executors.
        A round ``opened`` takes its partition's rows whose older values it erases (merged up
        to its target state version) and those whose tombstone had left the state by then; a
        round ``finished`` gives its partition's rows their stage times and status (a partition
        done in a round still open elsewhere does not wait for the others), and the
        ``tombstone_expired_at`` of the rows whose expired key it erased."""
        stage_cols = [f"{s}_at" for s in ROUND_STAGES]
        opens = local_frame(
            self.spark,
            [
                (
                    r["round"],
                    r["topic"],
                    r["partition"],
                    r["table_versions"]["state"],
                    r["expired_until"],
                )
                for r in opened
            ],
            "o_round long, o_topic string, o_partition int, o_state long, o_expired long",
        )
        stages = local_frame(
            self.spark,
            [
                (
                    r["round"],
                    r["topic"],
                    r["partition"],
                    r["completed_at"],
                    *(r[c] for c in stage_cols),
                )
                for r in finished
            ],
            "r_round long, r_topic string, r_partition int, r_completed long, "
            + ", ".join(f"r_{c} long" for c in stage_cols),
        )
        expiry = stages.select(
            F.col("r_round").alias("e_round"),
            F.col("r_topic").alias("e_topic"),
            F.col("r_partition").alias("e_partition"),
            F.col("r_completed").alias("e_completed"),
        )
        expired_at = f"{EXPIRED}_at"
        deletes = self.tables.ledger.read(self.spark).where(F.col("kind") == DELETE)
        columns = deletes.columns
        takes = deletes.join(
            F.broadcast(opens),
            (F.col("topic") == F.col("o_topic")) & (F.col("partition") == F.col("o_partition")),
            "left",
        )
        older = F.col("round").isNull() & (F.col("state_version") <= F.col("o_state"))
        expired = F.col("expiry_round").isNull() & (
            F.col("horizon") <= F.timestamp_millis(F.col("o_expired"))
        )
        takes = takes.select(
            *[c for c in columns if c not in ("round", "expiry_round")],
            F.when(older, F.col("o_round")).otherwise(F.col("round")).alias("round"),
            F.when(expired, F.col("o_round"))
            .otherwise(F.col("expiry_round"))
            .alias("expiry_round"),
            (F.col("o_round").isNotNull() & (older | expired)).alias("taken"),
        )
        joined = takes.join(
            F.broadcast(stages),
            (F.col("round") == F.col("r_round"))
            & (F.col("topic") == F.col("r_topic"))
            & (F.col("partition") == F.col("r_partition"))
            & F.col("completed_at").isNull(),
            "left",
        ).join(
            F.broadcast(expiry),
            (F.col("expiry_round") == F.col("e_round"))
            & (F.col("topic") == F.col("e_topic"))
            & (F.col("partition") == F.col("e_partition"))
            & F.col(expired_at).isNull(),
            "left",
        )
        changed = joined.where(
            F.col("taken") | F.col("r_round").isNotNull() | F.col("e_round").isNotNull()
        ).dropDuplicates(["topic", "partition", "key_hash", "offset"])  # one source row each

        def column(c: str) -> Column:
            if c in stage_cols:
                stamped = F.timestamp_millis(F.col(f"r_{c}"))
                return F.when(F.col("r_round").isNotNull(), stamped).otherwise(F.col(c)).alias(c)
            if c == expired_at:
                stamped = F.timestamp_millis(F.col("e_completed"))
                return F.when(F.col("e_round").isNotNull(), stamped).otherwise(F.col(c)).alias(c)
            return F.col(c)

        return _judge(changed.select(*[column(c) for c in columns]), now)


def _judge(deletes: DataFrame, now: int) -> DataFrame:
    """Each delete row's status from its stage times (``schedule.outcome``, on the executors)."""
    schema = deletes.schema
    required = STAGES[1:]  # "seen" is unknown for records graduated from the young table

    def judge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            rows = b.to_pylist()
            for r in rows:
                millis = {c: epoch_ms(r[c]) for c in ("deadline", *(f"{s}_at" for s in required))}
                result = row_outcome(millis, required, now)
                r["status"] = result.status
                r["breach_stage"] = result.breach_stage
                r["completed_at"] = _from_ms(result.completed_ms)
                r["updated_at"] = _from_ms(now)
            yield pa.RecordBatch.from_pylist(rows, schema=b.schema)

    return deletes.mapInArrow(judge, schema)


def _from_ms(ms: int | None) -> Any:
    import datetime as dt

    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _after(ms: int) -> None:
    """Wait until the wall clock has passed ``ms`` (at most a few milliseconds: ``ms`` is a
    commit that has happened)."""
    while time.time_ns() // 1_000_000 <= ms:
        time.sleep(0.001)
