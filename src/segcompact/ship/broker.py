"""What the shipper reads of a broker's log dir besides its partitions: which log dir it is
(Kafka's ``meta.properties``), and the partitions' high watermarks (its
``replication-offset-checkpoint``)."""

from __future__ import annotations

import hashlib
import os
import socket

from segcompact.ship.rules import high_watermarks
from segcompact.storage import FileSystem

CHECKPOINT = "replication-offset-checkpoint"


def log_dir_id(fs: FileSystem, log_dir: str) -> str:
    """A name for a log dir that no other broker's shares: Kafka's ``directory.id`` from its
    ``meta.properties`` (KRaft), else this host's name and a hash of the path."""
    try:
        text = fs.read_bytes(fs.join(log_dir, "meta.properties")).decode("utf-8", "replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "directory.id" and value.strip():
            return value.strip()
    digest = hashlib.sha256(os.fsencode(fs.abspath(log_dir))).hexdigest()[:16]
    return f"{socket.gethostname()}-{digest}"


def read_high_watermarks(fs: FileSystem, log_dir: str) -> dict[tuple[str, int], int] | None:
    """The high watermarks the broker last checkpointed in ``log_dir`` (every 5 s by default);
    None when it has no checkpoint file (not a broker's log dir). ValueError or OSError when
    it cannot be read."""
    try:
        text = fs.read_bytes(fs.join(log_dir, CHECKPOINT)).decode()
    except FileNotFoundError:
        return None
    return high_watermarks(text)
