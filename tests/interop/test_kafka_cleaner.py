"""segcompact keeps what Kafka's own log cleaner keeps, record for record, on the same log.

The log, both compactions and their timings come from the session fixture ``compacted``
(conftest.py, built by compacted.py). What is compared, per topic:

- Kafka's side: the records of every segment but the active one after its cleaner ran. The
  cleaner never cleans the active segment, and segcompact (``rolled_only``) never reads it.
- segcompact's side: the records of its published output, which ends at the log end offset of
  what it read, i.e. the active segment's base offset.
- Records, not batches: both regroup batches, Kafka's cleaner keeps empty batches for a
  producer's sequence state and for the last offset of its cleaning round, and segcompact
  ends with an empty batch at its log end when the last record was compacted away.
  Control batches (transaction markers) are not records of the compacted state.
- Each record's offset, timestamp, key, value (None for a tombstone) and headers in order.
  Tombstones are in both: the horizon (``delete.retention.ms``) is a year away.
- ``interop-young``: both leave the segments too young for ``min.compaction.lag.ms`` as they
  were, and clean only what is before them.

One difference is by design (DESIGN.md, Transactions): a transaction whose records are in
rolled segments but whose marker is in the active segment. Kafka's cleaner reads the marker
(it cleans up to the last stable offset, bounded by the active segment, and finds aborts in
the transaction index of every segment up to it); segcompact with ``rolled_only`` has not
seen the marker and holds those records back until it does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from segcompact.format.control import ControlType, control_type
from segcompact.format.logdir import parse_segment_file
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile
from tests.interop.cases import CASES, Case
from tests.interop.compacted import Compacted, Rec, data_records, segment_logs
from tests.support.jvm import run_java_tool

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TOPICS = [c.topic for c in CASES]
OPEN_COMMIT = "interop-open-commit"
# Topics whose raw log holds aborted records: the latest record per key is not the model.
WITH_ABORTS = {c.topic for c in CASES if c.kind in ("txns", "open-abort")}


def kafka_logs(compacted: Compacted, topic: str) -> list[Path]:
    """Kafka's cleaned partition, active segment last."""
    logs = segment_logs(compacted.kafka_dir(topic))
    assert parse_segment_file(str(logs[-1]))[0] == compacted.active_base[topic], (
        f"active moved: {logs}"
    )
    return logs


def kafka_cleaned(compacted: Compacted, topic: str) -> list[Rec]:
    return data_records(kafka_logs(compacted, topic)[:-1])


def segcompact_output(compacted: Compacted, topic: str) -> list[Rec]:
    return data_records(segment_logs(compacted.output_dir(topic)))


def rolled_input(compacted: Compacted, topic: str) -> list[Rec]:
    active = compacted.active_base[topic]
    return [r for r in compacted.produced[topic] if r[0] < active]


def latest_per_key(records: list[Rec]) -> list[Rec]:
    """What any compaction under the offset strategy keeps: each key's last record."""
    last = {r[2]: r for r in records}
    return sorted(last.values())


def cleaned_then_raw(records: list[Rec], uncleanable: int) -> list[Rec]:
    """Each key's last record before ``uncleanable``, then every record from it on."""
    return latest_per_key([r for r in records if r[0] < uncleanable]) + [
        r for r in records if r[0] >= uncleanable
    ]


@pytest.mark.parametrize("topic", [t for t in TOPICS if t != OPEN_COMMIT])
def test_same_records_as_kafka_cleaner(compacted: Compacted, topic: str) -> None:
    ours = segcompact_output(compacted, topic)
    theirs = kafka_cleaned(compacted, topic)
    assert ours == theirs


@pytest.mark.parametrize("topic", TOPICS)
def test_both_end_at_the_active_segment(compacted: Compacted, topic: str) -> None:
    """Both sides keep a batch ending just before the active segment (empty if need be), both
    agree with the obvious model, and neither touched the active segment."""
    active = compacted.active_base[topic]
    uncleanable = compacted.uncleanable_base[topic]
    theirs = kafka_cleaned(compacted, topic)
    rolled = rolled_input(compacted, topic)
    if topic not in WITH_ABORTS:
        assert theirs == cleaned_then_raw(rolled, uncleanable)
    assert any(r[3] is None for r in theirs), "no tombstone survived: the test proves little"
    cleanable = [r for r in rolled if r[0] < uncleanable]
    cleaned = [r for r in theirs if r[0] < uncleanable]
    assert len(cleaned) < len(cleanable) / 2, "the cleaner removed little: the test proves little"
    ours = [
        b
        for log in segment_logs(compacted.output_dir(topic))
        for b in SegmentReader(LocalInputFile(log))
    ]
    kafka = [
        b for log in kafka_logs(compacted, topic)[:-1] for b in SegmentReader(LocalInputFile(log))
    ]
    assert ours[-1].last_offset + 1 == active
    assert kafka[-1].last_offset + 1 == active
    name = f"{active:020d}.log"
    raw_active = (compacted.raw_dir(topic) / name).read_bytes()
    assert (compacted.kafka_dir(topic) / name).read_bytes() == raw_active


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.topic)
def test_output_keeps_the_input_codec(compacted: Compacted, case: Case) -> None:
    """``compression.type = producer``: Kafka's cleaner rewrites each batch with its own codec;
    segcompact writes the partition's input codec (librdkafka compressed every batch here)."""
    for root in (compacted.kafka_dir(case.topic), compacted.output_dir(case.topic)):
        codecs = {
            b.compression.label
            for log in segment_logs(root)
            for b in SegmentReader(LocalInputFile(log))
            if b.records_count and not b.is_control
        }
        assert codecs == {case.codec}, root


def test_commit_marker_in_the_active_segment(compacted: Compacted) -> None:
    """By design segcompact lags Kafka here: records of a transaction whose COMMIT marker is in
    the active segment are kept by Kafka's cleaner (it knows the outcome) and held back by
    segcompact, which then still keeps the older records they supersede."""
    topic = OPEN_COMMIT
    active = compacted.active_base[topic]
    raw = segment_logs(compacted.raw_dir(topic))
    open_txn = {
        r.offset
        for log in raw[:-1]
        for b in SegmentReader(LocalInputFile(log))
        if b.is_transactional and not b.is_control
        for r in b.records()
    }
    markers = [
        (b.base_offset, control_type(b.records()[0].key))
        for b in SegmentReader(LocalInputFile(raw[-1]))
        if b.is_control
    ]
    assert open_txn, "the transaction did not reach into a rolled segment"
    assert [m for _, m in markers] == [ControlType.COMMIT] and markers[0][0] >= active

    rolled = rolled_input(compacted, topic)
    theirs = kafka_cleaned(compacted, topic)
    ours = segcompact_output(compacted, topic)
    assert theirs == latest_per_key(rolled)
    assert ours == latest_per_key([r for r in rolled if r[0] not in open_txn])
    assert ours != theirs


def test_dump_log_segments_reads_published_output(compacted: Compacted) -> None:
    """Kafka's DumpLogSegments reads every published file: records, indexes, no complaint."""
    files: list[Path] = []
    logs: list[Path] = []
    for topic in TOPICS:
        for log in segment_logs(compacted.output_dir(topic)):
            logs.append(log)
            files += [log, log.with_suffix(".index"), log.with_suffix(".timeindex")]
    assert all(f.is_file() for f in files)
    proc = run_java_tool(
        "kafka.tools.DumpLogSegments",
        "--deep-iteration",
        "--index-sanity-check",
        "--files",
        ",".join(map(str, files)),
    )
    out = proc.stdout + proc.stderr
    assert "Exception" not in out and "mismatch" not in out.lower(), out[-3000:]
    assert "isvalid: false" not in out
    # A segment of one batch has no offset index entry (Kafka indexes a batch only once
    # index.interval.bytes have passed since the last entry), and DumpLogSegments says so
    # instead of checking it; every time index has the entry written when the segment closed.
    for log in logs:
        index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
        assert f"{timeindex} passed sanity check." in out
        if index.stat().st_size:
            assert f"{index} passed sanity check." in out
        else:
            assert f"{index} is empty." in out
    want = sum(len(segcompact_output(compacted, t)) for t in TOPICS)
    assert len(re.findall(r"^\| offset: \d+", proc.stdout, re.M)) == want


def test_segments_younger_than_the_lag_are_left_as_they_were(compacted: Compacted) -> None:
    """``min.compaction.lag.ms``: from the first segment holding a record within the lag of
    now, both keep every record, superseded or not, and clean only what is before it."""
    topic = "interop-young"
    uncleanable = compacted.uncleanable_base[topic]
    rolled = rolled_input(compacted, topic)
    young = [r for r in rolled if r[0] >= uncleanable]
    young_keys = [r[2] for r in young]
    assert len(young_keys) > len(set(young_keys)), "no superseded young record: proves little"
    for side in (kafka_cleaned(compacted, topic), segcompact_output(compacted, topic)):
        assert [r for r in side if r[0] >= uncleanable] == young
        assert len([r for r in side if r[0] < uncleanable]) < uncleanable / 2
