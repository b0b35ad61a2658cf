"""Kafka's own DumpLogSegments reads what segcompact writes: deep iteration, index sanity."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from segcompact.format.attributes import Compression
from segcompact.storage import LocalOutputDirectory
from tests.support.jvm import run_java_tool
from tests.support.output import OutputRecord, output_rows, write_partition

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.label)
def test_dump_log_segments_reads_our_segments_and_indexes(
    tmp_path: Path, codec: Compression
) -> None:
    records = [
        OutputRecord(
            o,
            1_700_000_000_000 + o,
            b"key-%d" % o,
            None if o % 10 == 0 else b"x" * 300,
            (("h", b"1"),) if o % 3 == 0 else (),
            0,
            o % 10 == 0,
            1_800_000_000_000 if o % 10 == 0 else None,
        )
        for o in range(0, 4000, 2)
    ]
    written = write_partition(
        LocalOutputDirectory(tmp_path),
        output_rows(records),
        log_end_offset=4005,
        compression=codec,
        segment_bytes=64 * 1024,
        index_interval_bytes=1024,
        batch_bytes=4096,
    )
    stems = [str(tmp_path / w.name).removesuffix(".log") for w in written]
    files = [stem + suffix for stem in stems for suffix in (".log", ".index", ".timeindex")]
    proc = run_java_tool(
        "kafka.tools.DumpLogSegments",
        "--deep-iteration",
        "--index-sanity-check",
        "--files",
        ",".join(files),
    )
    out = proc.stdout + proc.stderr
    assert "Exception" not in out and "mismatch" not in out.lower(), out[-2000:]
    assert "isvalid: false" not in out
    assert out.count("passed sanity check") == 2 * len(written)
    offsets = [int(m) for m in re.findall(r"^\| offset: (\d+)", proc.stdout, re.M)]
    assert offsets == [r.offset for r in records]
    assert f"compresscodec: {codec.label}" in proc.stdout
    assert "lastOffset: 4004 count: 0" in proc.stdout  # the empty batch at the log end
    assert "deleteHorizonMs: OptionalLong[1800000000000]" in proc.stdout
