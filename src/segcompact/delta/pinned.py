"""One version of a table, read by delta-rs wherever it runs (on an executor too): the
materialiser's read of its due partitions, sorted by DataFusion."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaError

from segcompact.delta.sql import sql_text


@dataclass(frozen=True, slots=True)
class Pinned:
    """One version of a table, as delta-rs opens it wherever it runs (an executor too)."""

    location: str
    storage_options: dict[str, str] = field(hash=False)
    version: int

    def open(self) -> DeltaTable:
        return DeltaTable(
            self.location, version=self.version, storage_options=self.storage_options or None
        )


# What DataFusion's sort holds in memory before it spills to the temporary directory.
SORT_MEMORY = "256M"


class SortError(RuntimeError):
    """DataFusion could not read or sort a partition's rows (its memory, a feature it lacks)."""


def partitions_log(
    state: DeltaTable,
    young: DeltaTable,
    partitions: Sequence[tuple[str, int]],
    columns: Sequence[str],
    *,
    memory: str = SORT_MEMORY,
    spill: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``state`` and of ``young`` (``raw`` true) of ``partitions`` (topic,
    partition), ``columns`` of them, in (topic, partition, offset) order, as DataFusion streams
    them in one thread: the files of other partitions are skipped (by partition values, else by
    statistics), deletion vectors applied, and the sort spills beyond ``memory`` into ``spill``
    (the temporary directory when None). One query for them all: each query lists the tables'
    files, so one per partition would cost in proportion to the partitions squared. What goes
    wrong in DataFusion raises :class:`SortError`, in one line (without the partitions)."""
    query = QueryBuilder({"datafusion.execution.target_partitions": "1"})
    query = query.register("state", state).register("young", young)
    settings = [f"SET datafusion.runtime.memory_limit = {sql_text(memory)}"]
    if spill is not None:
        settings.append(f"SET datafusion.runtime.temp_directory = {sql_text(spill)}")
    names = ", ".join(_identifier(c) for c in columns)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(int(partition))
    where = " OR ".join(
        f'("topic" = {sql_text(topic)} AND "partition" IN ({", ".join(map(str, sorted(ps)))}))'
        for topic, ps in sorted(by_topic.items())
    )
    sql = (
        f"SELECT {names}, false AS raw FROM state WHERE {where} UNION ALL "
        f'SELECT {names}, true AS raw FROM young WHERE {where} ORDER BY "topic", "partition", '
        '"offset"'
    )
    try:
        for setting in settings:
            pa.RecordBatchReader.from_stream(query.execute(setting)).read_all()
        yield from pa.RecordBatchReader.from_stream(query.execute(sql))
    except (pa.ArrowException, DeltaError) as e:
        raise SortError(" ".join(str(e).split())) from e


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
