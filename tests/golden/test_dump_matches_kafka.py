"""``segcompact dump`` prints what Kafka's own ``kafka-dump-log.sh`` (DumpLogSegments) prints,
line for line, with each of its flags: on the segments a real broker wrote (every codec,
headers, LogAppendTime, transactions and their markers) and on segcompact's own output (delete
horizons, indexes with entries, an empty batch at the log end)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from segcompact.format.attributes import Compression
from segcompact.storage import LocalOutputDirectory
from tests.support.jvm import run_java_tool
from tests.support.output import OutputRecord, output_rows, write_partition

pytestmark = pytest.mark.kafka

GOLDEN = Path(__file__).resolve().parent / "segments"
FLAGS = [[], ["--deep-iteration"], ["--print-data-log"], ["--index-sanity-check"]]


def _ours(tmp_path: Path) -> list[str]:
    records = [
        OutputRecord(
            o,
            1_700_000_000_000 + o,
            b"key-%d" % o,
            None if o % 10 == 0 else b"value \xe2\x98\x83 %d" % o,
            (("h", b"1"), ("g", None)) if o % 3 == 0 else (),
            0,
            o % 10 == 0,
            1_800_000_000_000 if o % 10 == 0 else None,
        )
        for o in range(0, 600, 2)
    ]
    written = write_partition(
        LocalOutputDirectory(tmp_path),
        output_rows(records),
        log_end_offset=605,
        compression=Compression.LZ4,
        segment_bytes=8 * 1024,
        index_interval_bytes=512,
        batch_bytes=1024,
    )
    stems = [str(tmp_path / w.name).removesuffix(".log") for w in written]
    return [stem + suffix for stem in stems for suffix in (".log", ".index", ".timeindex")]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "plain")
def test_dump_prints_what_kafkas_dump_log_segments_prints(tmp_path: Path, flags: list[str]) -> None:
    golden = sorted(
        str(f) for f in GOLDEN.glob("*/*") if f.suffix in (".log", ".index", ".timeindex")
    )
    files = ",".join([*golden, *_ours(tmp_path)])
    theirs = run_java_tool("kafka.tools.DumpLogSegments", *flags, "--files", files).stdout
    ours = subprocess.run(
        [sys.executable, "-m", "segcompact.cli", "dump", *flags, "--files", files],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert theirs.count("\n") > 50
    if not flags:
        assert "deleteHorizonMs: OptionalLong[1800000000000]" in theirs  # our output's horizons
        assert "endTxnMarker" not in theirs and "position: " in theirs
    if flags == ["--print-data-log"]:
        assert " endTxnMarker: COMMIT coordinatorEpoch: 0" in theirs and " payload: " in theirs
    assert ours.splitlines() == theirs.splitlines()
