"""Output rows for tests: retained records built a record at a time (:class:`OutputRecord`,
:func:`output_rows`) and a partition written in one call (:func:`write_partition`), over
``segcompact.compaction.output``'s :data:`ROWS` and :class:`PartitionWriter`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from segcompact.compaction.output import ROWS, PartitionWriter, WrittenSegment
from segcompact.format.io import OutputDirectory
from segcompact.format.record import Header


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One retained record, for building :data:`ROWS` a record at a time (:func:`output_rows`)."""

    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    headers: tuple[Header, ...]
    attributes: int
    tombstone: bool
    delete_horizon: int | None


def output_rows(records: Iterable[OutputRecord]) -> pa.Table:
    """:data:`ROWS` of ``records``."""
    return pa.Table.from_pylist(
        [
            {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": r.key,
                "value": r.value,
                "headers": [{"key": k, "value": v} for k, v in r.headers],
                "attributes": r.attributes,
                "tombstone": r.tombstone,
                "delete_horizon": r.delete_horizon,
            }
            for r in records
        ],
        schema=ROWS,
    )


def write_partition(
    directory: OutputDirectory, rows: pa.Table, **settings: Any
) -> list[WrittenSegment]:
    """Write ``rows`` (:data:`ROWS`, offset order) as segments into ``directory``; return the
    logs written. ``settings``: :class:`PartitionWriter`'s."""
    writer = PartitionWriter(directory, **settings)
    writer.add(rows)
    return writer.close()
