"""segcompact's codec on segments a real Kafka broker wrote (see README.md here)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from segcompact.config import TopicConfig
from segcompact.format.arrow import decode_segment
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile
from tests.support.model import ReferenceModel, read_log_records

HERE = Path(__file__).resolve().parent
EXPECTED: dict[str, Any] = json.loads((HERE / "expected.json").read_text())["topics"]


def _b(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def _logs(topic: str) -> list[Path]:
    return sorted((HERE / "segments" / f"{topic}-0").glob("*.log"))


@pytest.mark.parametrize("topic", sorted(EXPECTED))
def test_batches_match_what_the_broker_wrote(topic: str) -> None:
    expected = EXPECTED[topic]["batches"]
    found = [
        {
            "file": path.name,
            "position": b.position,
            "size": b.size,
            "base_offset": b.base_offset,
            "last_offset": b.last_offset,
            "count": b.records_count,
            "magic": b.magic,
            "compression": b.compression.label,
            "max_timestamp": b.max_timestamp,
            "is_transactional": b.is_transactional,
            "is_control": b.is_control,
            "producer_id": b.producer_id,
            "producer_epoch": b.producer_epoch,
            "base_sequence": b.base_sequence,
            "crc_valid": b.crc_valid,
        }
        for path in _logs(topic)
        for b in SegmentReader(LocalInputFile(path))
    ]
    assert found == [{k: e[k] for k in found[0]} for e in expected]


@pytest.mark.parametrize("topic", sorted(EXPECTED))
def test_records_match_what_was_produced(topic: str) -> None:
    spec = EXPECTED[topic]
    data = [
        r
        for path in _logs(topic)
        for b in SegmentReader(LocalInputFile(path))
        if not b.is_control
        for r in b.records()
    ]
    assert [r.offset for r in data] == [e["offset"] for e in spec["records"]]
    for r, e in zip(data, spec["records"], strict=True):
        assert (r.key, r.value) == (_b(e["key"]), _b(e["value"]))
        assert list(r.headers) == [(k, _b(v)) for k, v in e["headers"]]
        assert r.timestamp == (e["log_append_time"] or e["timestamp"])


@pytest.mark.parametrize("topic", sorted(EXPECTED))
@pytest.mark.parametrize("pure", [True, False], ids=["pure", "compiled"])
def test_arrow_decode_matches_the_record_model(topic: str, pure: bool) -> None:
    table = pa.Table.from_batches(
        [
            rb
            for path in _logs(topic)
            for rb in decode_segment(SegmentReader(LocalInputFile(path)), topic, 0, pure=pure)
        ]
    )
    models = [r for path in _logs(topic) for r in read_log_records(LocalInputFile(path), topic, 0)]
    rows = table.to_pylist()
    assert [r["offset"] for r in rows] == [m.offset for m in models]
    for row, m in zip(rows, models, strict=True):
        assert (row["key"], row["value"]) == (m.key, m.value)
        assert [(h["key"], h["value"]) for h in row["headers"]] == list(m.headers)
        assert int(row["timestamp"].timestamp() * 1000) == m.timestamp
        assert row["is_control"] == m.is_control and row["producer_id"] == m.producer_id


def test_reference_model_keeps_the_read_committed_view_of_the_txn_topic() -> None:
    spec = EXPECTED["golden-txn"]
    model = ReferenceModel(lambda _t: TopicConfig())
    for path in _logs("golden-txn"):  # one micro-batch per segment: the marker comes later
        model.apply(read_log_records(LocalInputFile(path), "golden-txn", 0), now_ms=0)
    committed = {}
    for e in spec["records"]:
        if e["txn_outcome"] == "committed":
            committed[_b(e["key"])] = _b(e["value"])
    assert {k[2]: v.value for k, v in model.state.items()} == committed
    assert model.log_end[("golden-txn", 0)] == spec["log_end_offset"]
