"""``segcompact dump``: the JSON contract of DESIGN.md, text output, and errors."""

from __future__ import annotations

import base64
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from segcompact.cli import main
from segcompact.dump import dump
from segcompact.format.attributes import Compression
from segcompact.format.batch import build_batch
from segcompact.format.record import Record
from segcompact.format.writer import SegmentWriter
from segcompact.storage import LocalOutputDirectory
from tests.support import tiny_log


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
        (["dump", "{tmp}/1234.log"], "not a segment's .log, .index or .timeindex file"),
        (["dump", "{tmp}/00000000000000000000.snapshot"], "not a segment's .log"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(tmp=tmp_path) for a in argv]
    for named in (a for a in argv if a.startswith(str(tmp_path))):
        Path(named).touch()  # a file there: its name is what is wrong
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


class _Sink:
    """A text stream that keeps only what it was given last (and how much)."""

    def __init__(self) -> None:
        self.chars = 0
        self.last = ""

    def write(self, text: str) -> int:
        self.chars += len(text)
        self.last = text
        return len(text)


def _peak(path: Path, as_json: bool) -> int:
    """The most memory Python held while dumping ``path`` with every record."""
    tracemalloc.start()
    try:
        dump([str(path)], deep=True, as_json=as_json, out=_Sink())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_dump_streams_a_batch_of_many_tiny_records(tmp_path: Path, as_json: bool) -> None:
    """Memory grows with a batch's bytes, never with its records' objects: ten times the
    records costs about their payload more (the issue's 49 KB file took 3.3 GB), and ten
    times the batches costs nothing more."""
    payloads, peaks = {}, {}
    for n in (2_000, 20_000):
        batch = tiny_log.v2_batch(0, n, Compression.ZSTD, keys=10)
        payloads[n] = n * 16  # about a tiny record's v2 bytes, decompressed
        peaks[n] = _peak(tiny_log.write_segment(tmp_path / f"one-{n}", 0, [batch]), as_json)
    many = [tiny_log.v2_batch(i * 2_000, 2_000, Compression.ZSTD, keys=10) for i in range(10)]
    peak_many = _peak(tiny_log.write_segment(tmp_path / "many", 0, many), as_json)

    assert peaks[20_000] - peaks[2_000] < 2 * (payloads[20_000] - payloads[2_000]), peaks
    assert peak_many < 1.5 * peaks[2_000], (peak_many, peaks)


def test_a_json_line_streamed_is_the_batch_with_its_records(tmp_path: Path) -> None:
    records = [Record(i, 10 + i, b"k%d" % i, None if i == 1 else b"v") for i in range(3)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch(records) + build_batch([], base_offset=3, last_offset=4))
    out = io.StringIO()
    dump([str(path)], deep=True, as_json=True, out=out)
    first, empty = (json.loads(line) for line in out.getvalue().splitlines())
    assert [r["offset"] for r in first["records"]] == [0, 1, 2]
    assert first["records"][1]["value_b64"] is None and first["count"] == 3
    assert empty["records"] == [] and empty["last_offset"] == 4
