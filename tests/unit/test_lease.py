"""The lease that keeps a second job off a job's locations: refused while live, taken over once
stale (expired, released, or its process gone from this host), lost by a holder that stalled."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from segcompact.clock import ManualClock
from segcompact.config import parse_config
from segcompact.lease import LEASE_DIR, Lease, LeaseHeld, LeaseLost, job_lease
from segcompact.storage import Storage

TIMEOUT = 60_000


def _lease(clock: ManualClock, *locations: Path, command: str = "run") -> Lease:
    return Lease(
        [str(p) for p in locations], Storage(), command=command, timeout_ms=TIMEOUT, clock=clock
    )


def _files(location: Path) -> list[str]:
    return sorted(p.name for p in (location / LEASE_DIR).iterdir())


def _holder(location: Path) -> dict[str, object]:
    (last,) = _files(location)
    data: dict[str, object] = json.loads((location / LEASE_DIR / last).read_text())
    return data


def _elsewhere(location: Path) -> None:
    """Make the lease's holder a process of another host (its liveness unknowable here)."""
    (name,) = _files(location)
    path = location / LEASE_DIR / name
    path.write_text(json.dumps({**json.loads(path.read_text()), "host": "another-host"}))


def test_a_live_lease_refuses_a_second_job_naming_the_holder(tmp_path: Path) -> None:
    clock = ManualClock(1_000)
    first = _lease(clock, tmp_path / "state", command="run")
    first.acquire()
    assert _files(tmp_path / "state") == [f"{0:020d}.json"]
    clock.advance(TIMEOUT - 1)
    with pytest.raises(LeaseHeld) as info:
        _lease(clock, tmp_path / "state", command="materialize").acquire()
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'state'} is in use by `segcompact run` on ")
    assert f"{socket.gethostname()} (pid {os.getpid()}), lease until 1970-01-01T00:01:01" in message
    assert len(message.splitlines()) == 1
    assert _files(tmp_path / "state") == [f"{0:020d}.json"]  # the refused job wrote nothing


def test_an_expired_lease_is_taken_over_and_its_holder_learns_it_lost(tmp_path: Path) -> None:
    clock = ManualClock(0)
    stalled = _lease(clock, tmp_path / "out")
    stalled.acquire()
    _elsewhere(tmp_path / "out")
    clock.advance(TIMEOUT)  # no renewal within the timeout
    taker = _lease(clock, tmp_path / "out", command="run")
    taker.acquire()
    assert _files(tmp_path / "out") == [f"{1:020d}.json"]  # the stale epoch removed
    assert _holder(tmp_path / "out")["owner"] == taker.me.owner
    with pytest.raises(
        LeaseLost, match=f"lost the lease on {tmp_path / 'out'} to `segcompact run`"
    ):
        stalled.renew()
    stalled.release()  # a lost lease is left to its taker
    assert _holder(tmp_path / "out")["owner"] == taker.me.owner
    assert not _holder(tmp_path / "out")["released"]


def test_renewal_moves_the_expiry_and_keeps_one_file(tmp_path: Path) -> None:
    clock = ManualClock(0)
    holder = _lease(clock, tmp_path / "chk")
    holder.acquire()
    _elsewhere(tmp_path / "chk")
    for _ in range(3):
        clock.advance(TIMEOUT // 3)
        holder.renew()
    assert _files(tmp_path / "chk") == [f"{3:020d}.json"]
    assert _holder(tmp_path / "chk")["expires_ms"] == TIMEOUT + TIMEOUT
    clock.advance(TIMEOUT - 1)  # past the first expiry, within the renewed one
    with pytest.raises(LeaseHeld):
        _lease(clock, tmp_path / "chk").acquire()


def test_a_holder_gone_from_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    clock = ManualClock(0)
    _lease(clock, tmp_path / "state").acquire()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    (name,) = _files(tmp_path / "state")
    path = tmp_path / "state" / LEASE_DIR / name
    path.write_text(json.dumps({**json.loads(path.read_text()), "pid": int(gone.stdout)}))
    # A kill -9 leaves its lease unexpired; a restart on the same host need not wait for it.
    _lease(clock, tmp_path / "state").acquire()
    assert _files(tmp_path / "state") == [f"{1:020d}.json"]


def test_an_earlier_process_with_this_pid_is_gone(tmp_path: Path) -> None:
    # A container restarted under the same host name runs its command as the same pid again:
    # a lease of that pid which this process does not hold is its predecessor's.
    clock = ManualClock(0)
    with _lease(clock, tmp_path / "chk"):
        pass
    (name,) = _files(tmp_path / "chk")
    path = tmp_path / "chk" / LEASE_DIR / name
    earlier = {**json.loads(path.read_text()), "owner": "an-earlier-run", "released": False}
    path.write_text(json.dumps({**earlier, "expires_ms": TIMEOUT}))
    _lease(clock, tmp_path / "chk").acquire()
    assert _files(tmp_path / "chk") == [f"{2:020d}.json"]


def test_a_released_lease_is_taken_at_once_and_epochs_only_grow(tmp_path: Path) -> None:
    clock = ManualClock(0)
    with _lease(clock, tmp_path / "state"):
        pass
    released = _holder(tmp_path / "state")
    assert released["released"] and _files(tmp_path / "state") == [f"{1:020d}.json"]
    with _lease(clock, tmp_path / "state") as again:
        assert _files(tmp_path / "state") == [f"{2:020d}.json"]
        assert _holder(tmp_path / "state")["owner"] == again.me.owner


def test_leases_are_taken_all_or_none(tmp_path: Path) -> None:
    clock = ManualClock(0)
    _lease(clock, tmp_path / "b_out").acquire()
    with pytest.raises(LeaseHeld, match="b_out is in use"):
        _lease(clock, tmp_path / "a_state", tmp_path / "b_out").acquire()
    # a_state (taken first, in name order) was given back: a third job takes it.
    assert _holder(tmp_path / "a_state")["released"]
    _lease(clock, tmp_path / "a_state").acquire()


def test_an_unreadable_lease_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "state" / LEASE_DIR).mkdir(parents=True)
    bad = tmp_path / "state" / LEASE_DIR / f"{4:020d}.json"
    bad.write_text("{not json")
    with pytest.raises(Exception, match=f"lease file {bad} is unreadable") as info:
        _lease(ManualClock(0), tmp_path / "state").acquire()
    assert len(str(info.value).splitlines()) == 1


def test_a_jobs_lease_covers_every_location_it_writes_that_python_opens() -> None:
    config = parse_config(
        {
            "source": {"paths": ["/logs"]},
            "state": {
                "table": "/t/state",
                "partitions_table": "main.db.partitions",
                "young_table": "hdfs://nn/young",
            },
            "output": {"path": "/out"},
            "stream": {"checkpoint": "s3a://b/chk", "lease_timeout_ms": 9_000},
            "spark": {"spark.hadoop.fs.s3a.access.key": "k", "spark.hadoop.fs.s3a.secret.key": "s"},
        },
        "c.toml",
    )
    lease = job_lease(config, "run")
    # Catalog tables are the catalog's; Spark alone opens hdfs://. A table's lease is beside it
    # (Delta creates a table only in a folder of its own files), the others' inside.
    assert [(p.location, p.dir) for p in lease.places] == [
        ("/out", "/out/.segcompact-lease"),
        ("/t/state", "/t/state.segcompact-lease"),
        ("/t/state_deletion_ledger", "/t/state_deletion_ledger.segcompact-lease"),
        ("/t/state_pending_txn", "/t/state_pending_txn.segcompact-lease"),
        ("s3a://b/chk", "s3a://b/chk/.segcompact-lease"),
    ]
    assert lease.timeout_ms == 9_000
