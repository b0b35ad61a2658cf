"""The session fixture of the interop tests: one Kafka log, compacted twice (compacted.py), once
for the whole run: ``make test``'s pytest-xdist workers each run a file at a time, and the first
to need it builds it for both (two brokers and two compactions)."""

from __future__ import annotations

import fcntl
import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.compacted import Compacted, compact_twice
from tests.support.jvm import kafka_jars_available, missing_kafka_message


@pytest.fixture(scope="session")
def compacted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Iterator[Compacted]:
    if not kafka_jars_available():
        # Not a skip: the test command fetches Kafka, so its absence is a failure.
        pytest.fail(missing_kafka_message())
    # The workers' temporary folders share a parent; without workers ("master"), the run's own.
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    built = shared / "interop.pickle"
    with (shared / "interop.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits while the first builds it
        if built.exists():
            result = pickle.loads(built.read_bytes())
        else:
            work = Path(tempfile.mkdtemp(prefix="interop-", dir=shared))
            result = compact_twice(request.getfixturevalue("spark"), work)
            built.write_bytes(pickle.dumps(result))
    yield result
    # Shown with `pytest -s`.
    print("\ninterop timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in result.timings.items()))
