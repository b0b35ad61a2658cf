"""Deletion-ledger rows as ``spark.ledger.read_rows`` gives them (times in epoch ms), for tests
of the SLA report without Spark."""

from __future__ import annotations

from typing import Any

from segcompact.erasure.schedule import ROUND_STAGES, STAGES

T0 = 1_795_000_000_000  # 2026-11-18T11:06:40Z
MINUTE, HOUR = 60_000, 3_600_000
SLAS = {"users": HOUR, "orders": 2 * HOUR}  # any other topic: an hour


def delete_row(
    topic: str, offset: int, appended: int, took: int | None, partition: int = 0, key: str = "k"
) -> dict[str, Any]:
    """A delete row whose stages are done one after another, the last ``took`` after
    ``appended`` (None: none done yet)."""
    row = _row(topic, partition, appended)
    row |= {"key_hash": key * 64, "offset": offset}
    for n, stage in enumerate(STAGES, 1):
        row[f"{stage}_at"] = None if took is None else appended + took * n // len(STAGES)
    return row | {"completed_at": None if took is None else appended + took}


def round_row(
    topic: str, number: int, appended: int, took: int | None, partition: int = 1
) -> dict[str, Any]:
    """A round row whose every stage is done ``took`` after ``appended`` (None: none yet)."""
    row = _row(topic, partition, appended) | {"round": number}
    for stage in ROUND_STAGES:
        row[f"{stage}_at"] = None if took is None else appended + took
    return row | {"completed_at": None if took is None else appended + took}


def _row(topic: str, partition: int, appended: int) -> dict[str, Any]:
    deadline = appended + SLAS.get(topic, HOUR)
    return {"topic": topic, "partition": partition, "appended_at": appended, "deadline": deadline}
