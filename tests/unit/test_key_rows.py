"""One key's rows, read by delta-rs, where some of the job's tables are not created yet."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from segcompact.delta.sql import DeltaSql
from segcompact.erasure.ledger_reads import key_rows
from segcompact.erasure.verdict import Held
from segcompact.storage import Storage


def test_a_table_not_created_yet_hides_nothing_the_others_hold(tmp_path: Path) -> None:
    state = pa.table(
        {
            "topic": ["users", "users"],
            "partition": pa.array([0, 0], pa.int32()),
            "key": [b"alice", b"bob"],
            "offset": pa.array([7, 9], pa.int64()),
            "tombstone": [False, True],
        }
    )
    write_deltalake(str(tmp_path / "state"), state)
    views = {name: str(tmp_path / name) for name in ("state", "young", "ledger")}
    sql = DeltaSql.open(views, Storage())
    assert sql is not None
    # No young table and no ledger (a job without a deletion SLA): the state's row stands.
    assert key_rows(sql, "users", 0, b"alice", "hash").current == Held(7, tombstone=False)
    found = key_rows(sql, "users", 0, b"bob", "hash")
    assert found.current == Held(9, tombstone=True) and found.ledger == []
    assert key_rows(sql, "users", 1, b"alice", "hash").current is None
