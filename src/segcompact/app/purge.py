"""``segcompact purge``: the erasure work that is due (``force``: every pending erasure) run
now: the upkeep, rounds opened and advanced."""

from __future__ import annotations

from segcompact.app.due import NOTHING_DUE, nothing_due_now
from segcompact.app.preconditions import lease, load
from segcompact.app.reply import Reply
from segcompact.app.session import session


def purge(config_path: str, *, force: bool, jvm_output: str | None) -> Reply:
    config = load(config_path, writes=True)
    with lease(config, "purge"):
        if not force and nothing_due_now(config, erasure=True):
            return Reply((NOTHING_DUE,))
        from segcompact.spark.job import Compactor

        report = Compactor(session(config, jvm_output), config).upkeep(force=force)
    lines = []
    if report.opened is not None:
        lines.append(f"erasure round {report.opened} opened")
    lines += [f"{t}-{p}: in an open erasure round" for t, p in report.partitions]
    lines += [f"erasure round {done} completed" for done in report.completed]
    lines += [f"waiting: {why}" for why in report.waiting]
    if not lines:
        lines.append(NOTHING_DUE)
    return Reply(tuple(lines))
