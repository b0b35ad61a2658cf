"""The SLA report's front matter: how many erasures met their deadline, over which period, for
which job. Pure: rows and a config in, plain dicts out (``segcompact sla --format json``).

A row is one shown deletion or overwrite round of :func:`segcompact.erasure.report.build`
(``status`` one of pending, met, breached; times as ISO-8601 text).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from segcompact.erasure.schedule import Status

if TYPE_CHECKING:  # the config's parser imports the erasure schedule
    from segcompact.config.model import CompactorConfig

STATUSES = (Status.MET, Status.PENDING, Status.BREACHED)
# What the summary calls each kind of row: a deletion asked for, a value replaced by a newer one.
DELETION, OVERWRITE = "deletion", "overwrite"


def shares(counts: Mapping[str, int]) -> dict[str, float]:
    """Each count's percentage of their sum, to one decimal, summing to exactly 100 (largest
    remainder: rounding each on its own can give 99.9 or 100.1); all 0.0 when the sum is 0."""
    total = sum(counts.values())
    if total == 0:
        return {k: 0.0 for k in counts}
    tenths = {k: n * 1000 // total for k, n in counts.items()}
    left = 1000 - sum(tenths.values())
    by_remainder = sorted(counts, key=lambda k: (-(counts[k] * 1000 % total), k))
    for k in by_remainder[:left]:
        tenths[k] += 1
    return {k: t / 10 for k, t in tenths.items()}


def tally(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts of ``rows`` by status, their total and each status's percentage."""
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    return {"total": len(rows), **counts, "percent": shares(counts)}


def summary(
    deletions: Sequence[Mapping[str, Any]],
    overwrites: Sequence[Mapping[str, Any]],
    sla_of: Callable[[str], int | None],
) -> dict[str, Any]:
    """Met / pending / breached overall, by kind, and per topic (with the topic's SLA)."""
    rows = [*deletions, *overwrites]
    topics = sorted({str(r["topic"]) for r in rows})
    return {
        "overall": tally(rows),
        "by_kind": {DELETION: tally(deletions), OVERWRITE: tally(overwrites)},
        "by_topic": [
            {"topic": t, "sla_ms": sla_of(t), **tally([r for r in rows if r["topic"] == t])}
            for t in topics
        ],
    }


def period(
    deletes: Sequence[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]]
) -> dict[str, int | None]:
    """The first and last deletion or overwrite the report covers (epoch ms; None when none)."""
    times = [r["appended_at"] for r in (*deletes, *rounds) if r.get("appended_at") is not None]
    return {"first_ms": min(times, default=None), "last_ms": max(times, default=None)}


def scope(config: CompactorConfig, config_path: str) -> dict[str, Any]:
    """The job the report is about: its config file, where it reads and writes, and every topic
    with a deletion SLA (``"*"``: the topics ``[defaults]`` gives one)."""
    slas = [
        {"topic": name, "sla_ms": config.sla_ms(name)}
        for name in sorted(config.topics)
        if config.sla_ms(name) is not None
    ]
    if config.defaults.gdpr_deletion_sla_ms is not None:
        slas.append({"topic": "*", "sla_ms": config.defaults.gdpr_deletion_sla_ms})
    return {
        "config": config_path,
        "sources": list(config.source.paths),
        "state_table": config.state.table,
        "ledger_table": config.state.ledger_table,
        "output": config.output.path,
        "checkpoint": config.stream.checkpoint,
        "topics": slas,
    }
