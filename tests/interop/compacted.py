"""One Kafka log, compacted twice: by Kafka's own log cleaner and by segcompact.

:func:`compact_twice` does the expensive part once for every interop test (the session fixture
``compacted`` in conftest.py calls it):

1. A real broker (Kafka 4.3, KRaft, 127.0.0.1) hosts one compacted topic per case in
   :data:`~tests.interop.cases.CASES`, each rolling every couple of KiB
   (``internal.segment.bytes``: since Kafka 4 ``segment.bytes`` must be at least 1 MiB; the
   internal key is the one Kafka's own tests use), and :func:`~tests.interop.cases.produce`
   fills them. The cleaner must not run yet: ``min.cleanable.dirty.ratio`` is 1.0,
   because an uncleaned log's dirty ratio is exactly 1.0 and Kafka cleans when the ratio
   *exceeds* the setting (0.99 would let it run), and ``log.cleaner.backoff.ms`` is long.
2. The broker stops cleanly and every partition directory is copied aside: the raw log.
3. The broker restarts with ``log.cleaner.backoff.ms=100``, the topics are altered to
   ``min.cleanable.dirty.ratio=0.01``, and :func:`compact_twice` polls the log dir's
   ``cleaner-offset-checkpoint`` until every topic is cleaned up to its active segment (the
   cleaner never goes further). The broker stops cleanly; the cleaned partitions are copied.
4. segcompact runs once (``rolled_only = true``, offset strategy) on the raw copy with a
   :class:`ManualClock` after every produced timestamp.

One case, ``interop-young``, has ``min.compaction.lag.ms`` of an hour on both sides and stamps
its last records with the time they are produced (the others are stamped in 2023): the
segments holding them are too young for Kafka's cleaner (its clock is the real one) and, with
segcompact's clock in 2023, are in the future for segcompact, so too young as well. Kafka's
cleaner stops at the first such segment (``Compacted.uncleanable_base``); so must segcompact.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from segcompact.clock import ManualClock
from segcompact.config import CompactorConfig, load_config
from segcompact.format.logdir import parse_segment_file
from segcompact.format.record import Header
from segcompact.format.segment import SegmentReader
from segcompact.storage import LocalInputFile
from tests.interop.cases import (
    BASE_TIMESTAMP_MS,
    CASES,
    PARTITION,
    SEGMENT_BYTES,
    messages,
    produce,
)
from tests.support import config as support_config
from tests.support.kafka_broker import KafkaBroker

# Tombstones must survive both compactions: a horizon far beyond any clock in the test.
DELETE_RETENTION_MS = 365 * 24 * 3600 * 1000
CLOCK_MS = BASE_TIMESTAMP_MS + 10_000_000  # segcompact's "now": after every record
CLEAN_TIMEOUT_S = 90.0
# Files of a partition directory that are part of the log. Kafka's cleaner leaves
# `*.deleted` (removed after file.delete.delay.ms), and may leave `*.cleaned` / `*.swap`.
LOG_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")

# (offset, timestamp, key, value, headers): what both compactions must agree on.
Rec = tuple[int, int, bytes, bytes | None, tuple[Header, ...]]


@dataclass
class Compacted:
    """The same log before and after both compactions."""

    work: Path
    raw: Path  # <raw>/<topic>-0: the partitions as produced (segcompact's input)
    kafka: Path  # <kafka>/<topic>-0: the partitions after Kafka's cleaner
    output: Path  # segcompact's output root: <output>/<topic>-0 -> .versions/...
    config: CompactorConfig
    produced: dict[str, list[Rec]]  # data records per topic, as read from the raw log
    active_base: dict[str, int]  # base offset of each topic's active segment
    # Where each topic's cleaning stops: the first segment too young for it, else the active one.
    uncleanable_base: dict[str, int]
    timings: dict[str, float] = field(default_factory=dict)

    def raw_dir(self, topic: str) -> Path:
        return self.raw / f"{topic}-{PARTITION}"

    def kafka_dir(self, topic: str) -> Path:
        return self.kafka / f"{topic}-{PARTITION}"

    def output_dir(self, topic: str) -> Path:
        """The published version's real directory (the partition path is a symlink)."""
        return Path(os.path.realpath(self.output / f"{topic}-{PARTITION}"))


# -- reading logs ---------------------------------------------------------------------------


def _newest_timestamp(log: Path) -> int:
    return max((b.max_timestamp for b in SegmentReader(LocalInputFile(log))), default=-1)


def segment_logs(directory: Path) -> list[Path]:
    """The ``.log`` files of a partition directory in offset order (not `.log.deleted`)."""
    return sorted(
        (p for p in directory.iterdir() if p.name.endswith(".log")),
        key=lambda p: parse_segment_file(p.name),
    )


def data_records(logs: list[Path]) -> list[Rec]:
    """Every record of non-control batches, in log order."""
    return [
        (r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
        for log in logs
        for batch in SegmentReader(LocalInputFile(log))
        if not batch.is_control
        for r in batch.records()
    ]


# -- Kafka's cleaner ------------------------------------------------------------------------


def cleaner_checkpoint(log_dir: Path) -> dict[tuple[str, int], int]:
    """``cleaner-offset-checkpoint``: per partition, the offset the cleaner has cleaned up to.

    Format: a version line, a count line, then ``<topic> <partition> <offset>`` lines.
    """
    path = log_dir / "cleaner-offset-checkpoint"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    out = {}
    for line in lines[2:]:
        topic, partition, offset = line.rsplit(" ", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def alter_topic_config(broker: KafkaBroker, topic: str, settings: dict[str, str]) -> None:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    resource = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in settings.items()
        ],
    )
    for future in broker.admin().incremental_alter_configs([resource]).values():
        future.result(30)


def copy_partition(src: Path, dest: Path) -> None:
    """The log files of one partition directory (not `.deleted` leftovers, not snapshots)."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        if f.suffix in LOG_SUFFIXES:
            shutil.copyfile(f, dest / f.name)


# -- segcompact -----------------------------------------------------------------------------


def write_config(tmp: Path, raw: Path) -> CompactorConfig:
    defaults = {
        "compaction.strategy": "offset",
        "delete.retention.ms": DELETE_RETENTION_MS,
        "min.compaction.lag.ms": 0,
        "min.cleanable.dirty.ratio": 0.01,
        # Small, as the input's; but segcompact packs batches of up to 1 MiB (not
        # configurable), so each partition's output here is one batch in one segment.
        "segment.bytes": 4096,
        "index.interval.bytes": 512,
    }
    topics = {case.topic: case.topic_config for case in CASES if case.topic_config}
    return load_config(support_config.write_config(tmp, [raw], defaults=defaults, topics=topics))


# -- both compactions -----------------------------------------------------------------------


def compact_twice(spark: SparkSession, work: Path) -> Compacted:
    """Produce every case, let Kafka's cleaner and segcompact each compact a copy (see above)."""
    from segcompact.spark.job import Compactor

    timings: dict[str, float] = {}
    began = time.monotonic()
    topic_config = {
        "cleanup.policy": "compact",
        "internal.segment.bytes": SEGMENT_BYTES,
        "min.cleanable.dirty.ratio": "1.0",
        "delete.retention.ms": DELETE_RETENTION_MS,
        "min.compaction.lag.ms": 0,
        "compression.type": "producer",
    }
    with KafkaBroker(work / "broker", properties={"log.cleaner.backoff.ms": 3_600_000}) as broker:
        for case in CASES:
            broker.create_topic(case.topic, config={**topic_config, **case.topic_config})
            produce(broker, case)
    timings["produce (broker start, produce, stop)"] = time.monotonic() - began

    raw, kafka = work / "raw", work / "kafka"
    produced, active_base, uncleanable_base = {}, {}, {}
    for case in CASES:
        src = broker.partition_dir(case.topic, PARTITION)
        copy_partition(src, raw / src.name)
        logs = segment_logs(raw / src.name)
        if len(logs) < 4:
            raise AssertionError(f"{case.topic}: only {len(logs)} segments; expected many rolls")
        active_base[case.topic] = parse_segment_file(str(logs[-1]))[0]
        produced[case.topic] = data_records(logs)
        # Only lagged topics have young segments (transaction markers are stamped when written).
        young = [
            parse_segment_file(str(log))[0]
            for log in logs
            if case.topic_config and _newest_timestamp(log) > CLOCK_MS
        ]
        uncleanable_base[case.topic] = min(young, default=active_base[case.topic])
        if case.kind == "young" and uncleanable_base[case.topic] >= active_base[case.topic]:
            raise AssertionError(f"{case.topic}: no rolled segment is young; expected several")
        if case.transactional:
            continue
        # Nothing was cleaned: the raw copy holds every record produced.
        want = [(m.key, m.value, m.headers) for m in messages(case)]
        got = [(k, v, h) for _, _, k, v, h in produced[case.topic]]
        if got != want:
            raise AssertionError(f"{case.topic}: raw log is not what was produced")

    began = time.monotonic()
    with KafkaBroker(work / "broker", properties={"log.cleaner.backoff.ms": 100}) as broker:
        for case in CASES:
            alter_topic_config(broker, case.topic, {"min.cleanable.dirty.ratio": "0.01"})
        deadline = time.monotonic() + CLEAN_TIMEOUT_S
        want_ckpt = {(t, PARTITION): o for t, o in uncleanable_base.items()}
        while True:
            ckpt = cleaner_checkpoint(broker.log_dir)
            if all(ckpt.get(tp) == o for tp, o in want_ckpt.items()):
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"Kafka's cleaner did not clean up to the uncleanable segments within "
                    f"{CLEAN_TIMEOUT_S}s: checkpoint {ckpt}, want {want_ckpt}"
                )
            time.sleep(0.1)
    timings["Kafka's cleaner (broker start, clean, stop)"] = time.monotonic() - began
    for case in CASES:
        src = broker.partition_dir(case.topic, PARTITION)
        copy_partition(src, kafka / src.name)

    began = time.monotonic()
    config = write_config(work / "segcompact", raw)
    Compactor(spark, config, ManualClock(CLOCK_MS)).run_once()
    timings["segcompact run_once"] = time.monotonic() - began

    return Compacted(
        work,
        raw,
        kafka,
        Path(config.output.path),
        config,
        produced,
        active_base,
        uncleanable_base,
        timings,
    )
