"""Short runs of both fuzzers (``make fuzz`` runs the long ones), seeded so a run repeats, and
every crasher they found replayed: each must now be refused as a corrupt batch, alike by the C
and the pure decoder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.seeds import records, segments
from tests.fuzz.segment_fuzzer import one_input, read

REPO = Path(__file__).resolve().parents[2]
DECODE_FUZZER = REPO / ".tools" / "fuzz" / "decode_fuzzer"
CRASHERS = sorted((Path(__file__).parent / "crashers").glob("segment-*"))


def _seeds(tmp_path: Path, seeds: dict[str, bytes]) -> Path:
    folder = tmp_path / "seeds"
    folder.mkdir()
    for name, data in seeds.items():
        (folder / name).write_bytes(data)
    (tmp_path / "corpus").mkdir()
    return folder


def _fuzz(command: list[str | Path], runs: int, tmp_path: Path) -> str:
    done = subprocess.run(
        [*command, f"-runs={runs}", "-seed=1", "-max_len=65536", f"-artifact_prefix={tmp_path}/"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Done {runs} runs" in done.stderr, done.stderr[-3000:]
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("leak-*"))
    return done.stderr


def test_the_c_decoder_under_sanitizers_survives_a_short_run(tmp_path: Path) -> None:
    if not DECODE_FUZZER.exists():
        pytest.skip(f"{DECODE_FUZZER} is not built: make fuzzers (make test builds it)")
    seeds = _seeds(tmp_path, records())
    options = ["-rss_limit_mb=2048", "-malloc_limit_mb=256"]
    _fuzz([DECODE_FUZZER, *options, tmp_path / "corpus", seeds], 200_000, tmp_path)


def test_the_segment_reader_and_both_decoders_survive_a_short_run(tmp_path: Path) -> None:
    seeds = _seeds(tmp_path, segments())
    command = [sys.executable, "-m", "tests.fuzz.segment_fuzzer", tmp_path / "corpus", seeds]
    _fuzz(command, 5_000, tmp_path)


@pytest.mark.parametrize("crasher", CRASHERS, ids=lambda p: p.name)
def test_a_crasher_is_a_corrupt_batch_for_both_decoders(crasher: Path) -> None:
    data = crasher.read_bytes()
    one_input(data)  # no exception but CorruptBatchError, and the decoders agree
    _rows, stopped, _valid, _last = read(data, pure=False)
    assert stopped is not None, "a crasher's input is corrupt"
