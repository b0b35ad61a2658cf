"""``segcompact dump``: the JSON contract of DESIGN.md, text output, and errors."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from segcompact.cli import main
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter
from segcompact.storage import LocalOutputDirectory


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    with SegmentWriter(LocalOutputDirectory(tmp_path), 0, index_interval_bytes=10) as writer:
        writer.append(
            build_batch(
                [Record(0, 10, b"a", b"1", (("h", b"x"), ("n", None)))],
                compression=Compression.ZSTD,
            )
        )
        writer.append(
            build_batch(
                [Record(1, 20, b"b", None)],
                delete_horizon_ms=500,
                producer_id=3,
                producer_epoch=1,
                base_sequence=0,
                is_transactional=True,
            )
        )
    return tmp_path / writer.log_name


def test_json_lines_hold_the_contract_fields(
    segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dump", str(segment), "--deep-iteration", "--format", "json"]) == 0
    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert first["file"] == str(segment) and first["position"] == 0
    assert (first["base_offset"], first["last_offset"], first["count"]) == (0, 0, 1)
    assert (first["magic"], first["compression"], first["crc_valid"]) == (2, "zstd", True)
    assert first["delete_horizon_ms"] is None and first["producer_id"] == -1
    assert not first["is_transactional"] and not first["is_control"]
    (record,) = first["records"]
    assert record["offset"] == 0 and record["timestamp"] == 10
    assert base64.b64decode(record["key_b64"]) == b"a"
    assert base64.b64decode(record["value_b64"]) == b"1"
    assert record["headers"] == [["h", base64.b64encode(b"x").decode()], ["n", None]]
    assert second["delete_horizon_ms"] == 500 and second["is_transactional"]
    assert second["producer_id"] == 3 and second["position"] > 0
    assert second["records"][0]["value_b64"] is None


def test_without_deep_iteration_no_records(
    segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dump", str(segment), "--format", "json"]) == 0
    assert all("records" not in json.loads(x) for x in capsys.readouterr().out.splitlines())


def test_text_output_and_indexes(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = segment.with_suffix(".index")
    assert main(["dump", "--files", f"{segment},{index}", "--print-data-log"]) == 0
    out = capsys.readouterr().out
    assert "compresscodec: zstd" in out and "deleteHorizonMs: OptionalLong[500]" in out
    assert (
        "| offset: 0 CreateTime: 10 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h,n] "
        "key: a payload: 1"
    ) in out
    assert "offset: 1 position: " in out
    assert main(["dump", str(segment), "--deep-iteration"]) == 0  # no key or payload
    assert "headerKeys: [h,n]\n" in capsys.readouterr().out


def test_corrupt_file_prints_good_batches_then_one_error_line(
    segment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    segment.write_bytes(segment.read_bytes()[:-3])
    assert main(["dump", str(segment), "--format", "json"]) == 1
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1
    (line,) = captured.err.splitlines()
    assert str(segment) in line and "runs past the end of the file" in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["dump", "/no/such/00000000000000000000.log"], "no such file"),
        (["dump"], "dump: name the files to print"),
        (["dump", "x.log", "--format", "xml"], "invalid choice"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
