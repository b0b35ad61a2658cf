"""What the merge has not read, gathered without Spark from real files: the source roots, the
source's manifest and the query's commit log, and the partitions table (a real Delta table)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from segcompact.backlog import manifest_dir, query_dir
from segcompact.compaction.output import OUTPUT_NOT_WRITTEN
from segcompact.config import CompactorConfig, load_config
from segcompact.delta.sql import DeltaSql
from segcompact.discovery import discover
from segcompact.erasure.report import iso
from segcompact.erasure.unread import ANY_TOPIC, BACKLOG, UNVERIFIED, findings
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.manifest import Manifest
from segcompact.unmerged import judged, unmerged
from tests.support.config import write_config

T0 = 1_700_000_000_000
MTIME = T0 + 60_000
HOUR = 3_600_000


def _segment(root: Path, tp: str, base: int, ts: int | None) -> str:
    path = root / tp / f"{base:020d}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"" if ts is None else build_batch([Record(base, ts, b"k", b"v")]))
    os.utime(path, ns=(MTIME * 1_000_000, MTIME * 1_000_000))
    return str(path)


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, CompactorConfig]:
    root = tmp_path / "in"
    _segment(root, "gdpr-0", 0, T0)
    _segment(root, "gdpr-0", 1, T0 + 120_000)  # a producer clock ahead: the file's time counts
    _segment(root, "gdpr-0", 2, None)  # empty: holds nothing
    _segment(root, "gdpr-1", 0, T0 + 1_000)
    _segment(root, "plain-0", 0, T0)  # no SLA
    path = write_config(
        tmp_path / "job", [root], topics={"gdpr": {"gdpr.deletion.sla.ms": 3_600_000}}
    )
    return root, load_config(path)


def _partitions(config: CompactorConfig, reasons: dict[tuple[str, int], str]) -> DeltaSql:
    rows = pa.table(
        {
            "topic": [t for t, _ in reasons],
            "partition": pa.array([p for _, p in reasons], pa.int32()),
            "uncleanable_reason": list(reasons.values()),
        }
    )
    if reasons:
        write_deltalake(config.state.partitions_table, rows)
    sql = DeltaSql.open({"partitions": config.state.partitions_table}, config.storage)
    assert sql is not None
    return sql


def _commit(config: CompactorConfig, seq: int, manifest_id: str | None) -> None:
    """The query's offset and commit logs with micro-batch 0 ending at ``seq``."""
    query = Path(query_dir(config))
    (query / "offsets").mkdir(parents=True)
    (query / "commits").mkdir()
    offset = f'{{"seq": {seq}, "manifest": "{manifest_id}"}}'
    (query / "offsets" / "0").write_text(f"v1\n{{}}\n{offset}\n")
    (query / "commits" / "0").write_text("v1\n{}\n")


def _found(config: CompactorConfig, sql: DeltaSql, **kwargs: object) -> dict[str, tuple]:
    """Each unread location (below the source root, or as given) with its time and why."""
    root = config.source.paths[0] + "/"
    return {
        u.location.removeprefix(root): (u.since_ms, u.why)
        for u in unmerged(config, sql, **kwargs)  # type: ignore[arg-type]
    }


def test_before_any_batch_every_segment_of_an_sla_topic_is_unread(
    job: tuple[Path, CompactorConfig],
) -> None:
    _, config = job
    found = _found(config, _partitions(config, {}))
    assert found == {
        "gdpr-0/00000000000000000000.log": (T0, "not merged yet"),
        "gdpr-0/00000000000000000001.log": (MTIME, "not merged yet"),
        "gdpr-1/00000000000000000000.log": (T0 + 1_000, "not merged yet"),
    }
    every = _found(config, _partitions(config, {}), wanted=lambda t, p: t == "plain")
    assert list(every) == ["plain-0/00000000000000000000.log"]


def test_segments_a_committed_batch_read_are_merged_but_a_damaged_ones_rest(
    job: tuple[Path, CompactorConfig],
) -> None:
    root, config = job
    manifest = Manifest(manifest_dir(config), config.storage)
    manifest.append(discover(config.source.paths, rolled_only=False, storage=config.storage))
    # A partition at a time in turn: gdpr-0's first, gdpr-1's, plain-0's, then gdpr-0's others.
    assert [(e.file.topic, e.file.partition) for e in manifest.entries()] == [
        ("gdpr", 0),
        ("gdpr", 1),
        ("plain", 0),
        ("gdpr", 0),
        ("gdpr", 0),
    ]
    _commit(config, 5, manifest.id)  # every segment
    damaged = str(root / "gdpr-1" / f"{0:020d}.log")
    reasons = {
        ("gdpr", 1): f"{damaged}: corrupt batch at position 0, base offset 0: CRC mismatch",
        ("gdpr", 7): "/gone/gdpr-7/00000000000000000000.log: segment file not found",
        # Merged, its output failed: the ledger's rounds wait for it, not unread data.
        ("gdpr", 0): f"{OUTPUT_NOT_WRITTEN} (a version of 2 segments): OSError: disk full",
    }
    found = _found(config, _partitions(config, reasons))
    assert found.pop("gdpr-1/00000000000000000000.log") == (
        T0 + 1_000,
        f"past the damage of an uncleanable partition: {reasons[('gdpr', 1)]}",
    )
    assert found == {"gdpr-7": (None, f"uncleanable: {reasons[('gdpr', 7)]}")}


def test_a_checkpoint_that_cannot_be_read_leaves_nothing_known_merged(
    job: tuple[Path, CompactorConfig],
) -> None:
    _, config = job
    _commit(config, 99, "not-this-manifest")  # past the end of a manifest that is not there
    found = _found(config, _partitions(config, {}))
    assert len(found) == 3
    assert all(why.startswith("not known to be merged") for _, why in found.values())


def test_a_source_root_that_cannot_be_listed_may_hold_any_partition(tmp_path: Path) -> None:
    root = tmp_path / "in"
    _segment(root, "gdpr-0", 0, T0)
    gone = tmp_path / "unmounted"
    path = write_config(
        tmp_path / "job",
        [root, gone],
        topics={"gdpr": {"gdpr.deletion.sla.ms": 2 * HOUR}, "fast": {"gdpr.deletion.sla.ms": HOUR}},
    )
    config = load_config(path)
    sql = _partitions(config, {})
    (anywhere,) = [u for u in unmerged(config, sql) if u.topic == ANY_TOPIC]
    assert anywhere.location == str(gone) and anywhere.since_ms is None
    assert "cannot be listed" in anywhere.why
    # Judged by the smallest SLA; in every partition's proof.
    parts = {p.topic: p for p in judged(config, sql, T0)}
    assert parts[ANY_TOPIC].sla_ms == HOUR and parts[ANY_TOPIC].status == UNVERIFIED
    assert parts["gdpr"].status == BACKLOG
    shown = [f["location"] for f in findings(unmerged(config, sql), "other", 3, iso)]
    assert shown == [str(gone)]
