"""The scan behind ``verify-erasure``, on real Parquet files and segments (no Spark)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from segcompact.erasure.scan import Finding, ScanResult, scan_for_key
from segcompact.format.attributes import Compression
from segcompact.storage import LocalFileSystem, LocalOutputDirectory
from tests.support.output import OutputRecord, output_rows, write_partition

KEY = b"user-42"
LIVE = 9  # the key's live value: its state row and the published output's copy
OLD_VALUE = b"old address: 1 Main Street " * 20


def _rows(path: Path, rows: list[tuple[str, int, bytes, int, bytes | None]]) -> Path:
    topic, partition, key, offset, value = (list(c) for c in zip(*rows, strict=True))
    table = pa.table(
        {
            "topic": pa.array(topic, pa.string()),
            "partition": pa.array(partition, pa.int32()),
            "key": pa.array(key, pa.binary()),
            "offset": pa.array(offset, pa.int64()),
            "value": pa.array(value, pa.binary()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="snappy")
    return path


def _segments(directory: Path, records: list[tuple[int, bytes, bytes | None]]) -> Path:
    """Records ``(offset, key, value)`` as LZ4 segments in ``directory``: its first log."""
    written = write_partition(
        LocalOutputDirectory(directory),
        output_rows(
            OutputRecord(o, 1_000 + o, k, v, (), 0, v is None, None) for o, k, v in records
        ),
        log_end_offset=records[-1][0] + 1,
        log_start_offset=0,
        compression=Compression.LZ4,
        segment_bytes=1 << 20,
        index_interval_bytes=4096,
    )
    return directory / written[0].name


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Any]:
    """A state table, the output's versions, a checkpoint directory and a Kafka log dir."""
    state = tmp_path / "state"
    _rows(
        state / "part-00000-a.c000.snappy.parquet",
        [
            ("users", 0, KEY, 5, OLD_VALUE),  # an older value, not yet vacuumed
            ("users", 0, KEY, LIVE, b"live"),
            ("users", 0, b"user-43", 6, b"x"),
            ("users", 1, KEY, 105, b"x"),
            ("users", 10, KEY, 110, b"x"),
            ("xusers", 0, KEY, 200, b"x"),
        ],
    )
    log = state / "_delta_log"
    log.mkdir()
    (log / "00000000000000000000.json").write_text('{"commitInfo": {}}\n')
    out = tmp_path / "out"
    versions = out / ".versions"
    _segments(versions / "users-0" / "v1", [(3, KEY, OLD_VALUE), (4, b"user-43", b"y")])
    _segments(versions / "users-0" / "v2", [(4, b"user-43", b"y"), (LIVE, KEY, b"live")])
    _segments(versions / "users-0" / "v3.tmp", [(6, KEY, None), (LIVE, KEY, b"live")])
    _segments(versions / "users-10" / "v1", [(50, KEY, b"other partition")])
    _segments(versions / "xusers-0" / "v1", [(70, KEY, b"other topic")])
    _segments(versions / "users-1" / "v1", [(80, KEY, b"partition 1")])
    os.symlink(".versions/users-0/v2", out / "users-0")
    checkpoint = tmp_path / "checkpoint"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text('{"users": {"0": 10}}')
    kafka = tmp_path / "kafka"
    _segments(kafka / "users-0", [(1, KEY, b"first"), (3, KEY, OLD_VALUE), (LIVE, KEY, b"live")])
    _segments(kafka / "users-10", [(50, KEY, b"other partition")])
    return {
        "tables": [str(state)],
        "outputs": [str(out)],
        "others": [str(checkpoint)],
        "sources": [str(kafka)],
        "topic": "users",
        "partition": 0,
        "key": KEY,
        "live_offsets": {LIVE},
    }


def _scan(layout: dict[str, Any], **changes: Any) -> ScanResult:
    return scan_for_key(**{**layout, **changes})


def _where(findings: list[Finding], kind: str) -> list[tuple[int | None, str]]:
    """``(offset, location)`` of the findings of ``kind``, by location then offset."""
    hits = [(f.offset, f.location) for f in findings if f.kind == kind]
    return sorted(hits, key=lambda h: (h[1], -1 if h[0] is None else h[0]))


def test_older_values_found_live_value_left_out(layout: dict[str, Any], tmp_path: Path) -> None:
    result = _scan(layout)
    state = tmp_path / "state" / "part-00000-a.c000.snappy.parquet"
    versions = tmp_path / "out" / ".versions" / "users-0"
    assert _where(result.found, "table") == [(5, str(state))]
    assert _where(result.found, "output") == [
        (3, str(versions / "v1" / "00000000000000000000.log")),
        (6, str(versions / "v3.tmp" / "00000000000000000000.log")),
    ]
    assert [f for f in result.found if f.kind not in ("table", "output")] == []
    assert result.notes == []


def test_include_live_reports_the_live_copies_once(layout: dict[str, Any]) -> None:
    live = [f for f in _scan(layout, include_live=True).found if f.offset == LIVE]
    # State row, published v2, staged v3: the symlink out/users-0 -> v2 is not walked again.
    assert sorted((f.kind, Path(f.location).parent.name) for f in live) == [
        ("output", "v2"),
        ("output", "v3.tmp"),
        ("table", "state"),
    ]
    assert all("/.versions/" in f.location for f in live if f.kind == "output")


def test_details_name_the_version_and_tombstone(layout: dict[str, Any]) -> None:
    details = {f.offset: f.detail for f in _scan(layout).found}
    assert details[3] == f"output version v1, value of {len(OLD_VALUE)} bytes"
    assert details[6] == "staged output version v3, tombstone"
    assert details[5] == "table data file (Parquet), row of offset 5"


def test_other_partitions_and_topics_not_matched(layout: dict[str, Any]) -> None:
    found = _scan(layout, include_live=True).found
    assert {f.offset for f in found} == {3, 5, 6, LIVE}
    assert not any(part in f.location for f in found for part in ("users-10", "users-1/", "xusers"))
    # The same files do match when asked for those partitions.
    assert {f.offset for f in _scan(layout, partition=10).found} == {50, 110}
    assert {f.offset for f in _scan(layout, partition=1).found} == {80, 105}
    assert {f.offset for f in _scan(layout, topic="xusers").found} == {70, 200}


def test_upstream_reported_apart(layout: dict[str, Any], tmp_path: Path) -> None:
    result = _scan(layout)
    log = str(tmp_path / "kafka" / "users-0" / "00000000000000000000.log")
    assert _where(result.upstream, "upstream") == [(1, log), (3, log)]
    assert [f for f in result.upstream if f.kind != "upstream"] == []
    assert not any("kafka" in f.location for f in result.found)
    assert _where(_scan(layout, include_live=True).upstream, "upstream")[-1] == (LIVE, log)


def test_raw_bytes_found_in_delta_log_and_checkpoint(
    layout: dict[str, Any], tmp_path: Path
) -> None:
    commit = tmp_path / "state" / "_delta_log" / "00000000000000000001.json"
    commit.write_text(json.dumps({"add": {"stats": {"minValues": {"key": KEY.decode()}}}}))
    offsets = tmp_path / "checkpoint" / "offsets" / "1"
    offsets.write_bytes(b"garbage " + KEY + b" garbage")
    result = _scan(layout)
    assert _where(result.found, "raw") == [(None, str(offsets)), (None, str(commit))]
    assert {f.detail for f in result.found if f.kind == "raw"} == {
        "table file: its bytes hold the key",
        "file: its bytes hold the key",
    }


def test_delta_checkpoint_parquet_searched_decoded(layout: dict[str, Any], tmp_path: Path) -> None:
    # Not the column's min or max: those are also in the footer's statistics, uncompressed.
    stats = [json.dumps({"minValues": {"key": k}}) for k in ("a", KEY.decode() * 30, "z")]
    adds = pa.array(
        [{"path": f"part-{i}.parquet", "stats": s} for i, s in enumerate(stats)] + [None],
        pa.struct([("path", pa.string()), ("stats", pa.string())]),
    )
    path = tmp_path / "state" / "_delta_log" / "00000000000000000010.checkpoint.parquet"
    pq.write_table(pa.table({"add": adds, "txn": pa.array([None] * 3 + [1], pa.int64())}), path)
    assert KEY * 30 not in path.read_bytes()  # compressed: only decoding shows it
    raw = [f for f in _scan(layout).found if f.kind == "raw"]
    assert raw == [
        Finding(
            "raw",
            str(path),
            None,
            "Delta log checkpoint (Parquet): column add.stats holds the key's bytes",
        )
    ]


def test_compressed_copies_found_only_by_decoding(tmp_path: Path) -> None:
    key = b"customer:" + b"ab" * 200  # compresses well, so it never shows in the raw bytes
    # Neither the column's min nor its max: those are in the footer's statistics, uncompressed.
    rows = [
        ("users", 0, k, o, v) for o, k, v in [(0, b"a", b"a"), (1, key, OLD_VALUE), (2, b"z", b"z")]
    ]
    parquet = _rows(tmp_path / "t" / "part-0.parquet", rows)
    log = _segments(tmp_path / "o" / "users-0" / "v1", [(2, key, OLD_VALUE)])
    for path in (parquet, log):
        assert key not in path.read_bytes() and OLD_VALUE not in path.read_bytes()
    result = scan_for_key(
        tables=[str(tmp_path / "t")],
        outputs=[str(tmp_path / "o")],
        others=[],
        sources=[],
        topic="users",
        partition=0,
        key=key,
        live_offsets=(),
    )
    assert [(f.kind, f.offset) for f in result.found] == [("table", 1), ("output", 2)]
    assert result.notes == []


def test_short_key_skips_raw_search_with_a_note(tmp_path: Path) -> None:
    key = b"k1"
    _rows(
        tmp_path / "t" / "part-0.parquet", [("users", 0, key, 1, b"v"), ("users", 0, b"k", 3, b"v")]
    )
    (tmp_path / "t" / "_delta_log").mkdir()
    (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").write_bytes(b'"k1"')
    _segments(tmp_path / "o" / "users-0" / "v1", [(2, key, None), (4, b"k12", b"v")])
    kwargs: dict[str, Any] = {"others": [], "sources": [], "topic": "users", "partition": 0}
    result = scan_for_key(
        tables=[str(tmp_path / "t")],
        outputs=[str(tmp_path / "o")],
        key=key,
        live_offsets=(),
        **kwargs,
    )
    assert [(f.kind, f.offset) for f in result.found] == [("table", 1), ("output", 2)]
    assert len(result.notes) == 1 and "not searched byte for byte" in result.notes[0]
    long_key = scan_for_key(
        tables=[str(tmp_path / "t")], outputs=[], key=b'"k1"', live_offsets=(), **kwargs
    )
    assert [f.kind for f in long_key.found] == ["raw"] and long_key.notes == []


def test_symlinks_not_followed(layout: dict[str, Any], tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _segments(elsewhere / "users-0" / "v9", [(1, KEY, b"not ours")])
    (elsewhere / "secret").write_bytes(KEY)
    os.symlink(elsewhere, tmp_path / "out" / "linked")
    os.symlink(elsewhere / "secret", tmp_path / "checkpoint" / "secret")
    os.symlink(elsewhere / "secret", tmp_path / "state" / "secret.json")
    result = _scan(layout)
    assert not any("elsewhere" in f.location or "linked" in f.location for f in result.found)
    assert {f.offset for f in result.found} == {3, 5, 6}
    # Followed, the same files would be found: they do hold the key.
    assert _scan(layout, outputs=[str(elsewhere)], others=[str(elsewhere)]).found


def test_undecodable_log_falls_back_to_raw_bytes(layout: dict[str, Any], tmp_path: Path) -> None:
    staged = tmp_path / "out" / ".versions" / "users-0" / "v4.tmp"
    staged.mkdir()
    bad = staged / "00000000000000000000.log"
    bad.write_bytes(b"\x00" * 8 + b"\xff\xff\xff\x00" + KEY + b"\x00" * 40)
    clean = staged / "00000000000000000100.log"
    clean.write_bytes(b"\x00" * 8 + b"\xff\xff\xff\x00" + b"\x00" * 40)
    result = _scan(layout)
    raw = [f for f in result.found if f.kind == "raw"]
    assert [f.location for f in raw] == [str(bad)]
    assert "does not decode" in raw[0].detail and "raw bytes hold the key" in raw[0].detail
    # An owned file that does not decode proves nothing, key bytes or not.
    unreadable = [f for f in result.found if f.kind == "unreadable"]
    assert [f.location for f in unreadable] == [str(clean)]


def test_file_gone_during_scan_is_skipped(
    layout: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = LocalFileSystem.input_file

    def deleted_first(fs: LocalFileSystem, path: str) -> Any:
        if "/v1/" in path:
            os.unlink(path)  # retention or the cleaner got there between listing and reading
        return read(fs, path)

    monkeypatch.setattr(LocalFileSystem, "input_file", deleted_first)
    found = _scan(layout).found
    assert [(f.kind, f.offset) for f in found] == [("table", 5), ("output", 6)]


_UNPRIVILEGED = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]


def _scan_unprivileged(layout: dict[str, Any]) -> list[Finding]:
    """The scan as a user file permissions apply to: root reads mode-000 files anyway."""
    if os.geteuid() != 0:
        return _scan(layout).found
    if shutil.which("setpriv") is None:
        pytest.skip("running as root, and no setpriv to drop the capability to read anything")
    args = {**layout, "live_offsets": sorted(layout["live_offsets"]), "key": KEY.decode()}
    code = (
        "import json, sys, dataclasses\n"
        "from segcompact.erasure.scan import scan_for_key\n"
        "a = json.loads(sys.argv[1]); a['key'] = a['key'].encode()\n"
        "print(json.dumps([dataclasses.astuple(f) for f in scan_for_key(**a).found]))\n"
    )
    run = subprocess.run(
        [*_UNPRIVILEGED, sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0 and "setpriv" in run.stderr:
        pytest.skip(f"cannot drop capabilities here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    return [Finding(*row) for row in json.loads(run.stdout)]


def test_unreadable_files_are_findings(layout: dict[str, Any], tmp_path: Path) -> None:
    log = tmp_path / "out" / ".versions" / "users-0" / "v2" / "00000000000000000000.log"
    parquet = tmp_path / "state" / "part-00000-a.c000.snappy.parquet"
    locked = tmp_path / "checkpoint" / "offsets"
    for path in (log, parquet, locked):
        path.chmod(0)
    try:
        found = _scan_unprivileged(layout)
    finally:
        for path in (log, parquet):
            path.chmod(0o644)
        locked.chmod(0o755)
    unreadable = sorted(f.location for f in found if f.kind == "unreadable")
    assert unreadable == sorted(str(p) for p in (log, parquet, locked))
    assert {f.offset for f in found if f.kind != "unreadable"} == {3, 6}
