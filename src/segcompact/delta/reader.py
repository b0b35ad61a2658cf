"""What segcompact reads of one Delta table, whichever engine reads it.

Two implementations: delta-rs (:class:`segcompact.delta.native.NativeReader`, in the process, no
JVM) and Spark (``segcompact.spark.table_reader.SparkReader``). Which one reads a table is
decided once, from its location, by :func:`segcompact.delta.native.open_reader`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

    from segcompact.delta.pinned import Pinned


class TableReader(Protocol):
    """One table's snapshot as of each call (a reader is asked for when needed, not kept)."""

    def schema_json(self) -> str | None:
        """The table's schema in Delta's JSON (Spark's ``StructType`` JSON); None when there is
        no table there yet."""
        ...

    def version(self) -> int:
        """The table's newest version."""
        ...

    def properties(self) -> dict[str, str]:
        """The table's properties (``delta.*`` and the others)."""
        ...

    def commit_times(self, since: int) -> dict[int, int]:
        """Each commit's time in epoch ms, from version ``since`` on."""
        ...

    def arrow(
        self, columns: Sequence[str] | None = None, where: pc.Expression | None = None
    ) -> pa.Table:
        """The live rows matching ``where`` (all when None), ``columns`` of them (all when None),
        in the driver: for small reads."""
        ...

    def may_hold_rows(self) -> bool:
        """False only when the table has no data file."""
        ...

    def may_hold_until(self, column: str, ms: int) -> bool:
        """Whether a live row's timestamp ``column`` may be at or before ``ms``: False only when
        the files' statistics say that none is."""
        ...

    def small_files(
        self, below: int, partitions: Collection[tuple[str, int]]
    ) -> tuple[int, dict[tuple[Any, ...], int]]:
        """How many of the table's partition columns lead ``segcompact.delta.native.LAYOUT``
        (0 for a table partitioned otherwise), and per table partition holding some of
        ``partitions`` (topic, partition) at least, how many of its files are under ``below``
        bytes."""
        ...

    def pinned(self) -> Pinned | None:
        """The newest version, for delta-rs to read wherever it runs (an executor too); None
        when only Spark reads the table."""
        ...
