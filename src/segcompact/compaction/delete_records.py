"""KIP-107's delete-records, what it decides: the requests Kafka's tool reads, and the new low
watermark of each partition. ``segcompact.spark.delete_records`` applies them to the tables.

``kafka-delete-records.sh --offset-json-file`` reads::

    {"partitions": [{"topic": "orders", "partition": 0, "offset": 42}], "version": 1}

An offset of -1 means the log end offset. The log start offset only moves forward.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from segcompact.errors import UsageError

OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A partition's new low watermark, or Kafka's error name for why not."""

    low_watermark: int | None = None
    error: str | None = None


def parse_offset_json(text: str | bytes, path: str) -> dict[tuple[str, int], int]:
    """The requests of a ``kafka-delete-records.sh`` JSON file's ``text``; UsageError naming
    the problem and ``path``."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise UsageError(f"{path}: not a JSON offset file: {e}") from None
    parts = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(parts, list) or not parts:
        raise UsageError(f'{path}: expected {{"partitions": [{{"topic", "partition", "offset"}}]}}')
    out: dict[tuple[str, int], int] = {}
    for i, p in enumerate(parts):
        ok = (
            isinstance(p, dict)
            and isinstance(p.get("topic"), str)
            and type(p.get("partition")) is int
            and type(p.get("offset")) is int
        )
        if not ok:
            raise UsageError(
                f"{path}: partitions[{i}] = {json.dumps(p)}: expected topic (string), "
                "partition (integer) and offset (integer)"
            )
        key = (p["topic"], p["partition"])
        if key in out:
            raise UsageError(f"{path}: {p['topic']}-{p['partition']} is listed twice")
        out[key] = p["offset"]
    return out


def low_watermark(current: int | None, log_end: int | None, requested: int) -> Outcome:
    """Kafka's answer for one partition (``current``/``log_end`` None: unknown partition)."""
    if current is None or log_end is None:
        return Outcome(error=UNKNOWN_TOPIC_OR_PARTITION)
    target = log_end if requested == -1 else requested
    if target < 0 or target > log_end:
        return Outcome(error=OFFSET_OUT_OF_RANGE)
    return Outcome(low_watermark=max(current, target))
