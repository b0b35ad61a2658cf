"""``segcompact export``: published versions copied out as a Kafka log dir."""

from __future__ import annotations

from segcompact.app.preconditions import load
from segcompact.app.reply import Reply
from segcompact.errors import UsageError
from segcompact.export import export
from segcompact.publication import Output


def export_to(config_path: str, to: str, *, topic: str | None, partition: int | None) -> Reply:
    if not to.strip():
        raise UsageError("--to: empty path (name the folder to export into)")
    config = load(config_path)
    config.storage.check("--to", to)
    done = export(
        Output(config.output.path, config.storage),
        to,
        config.storage,
        topic=topic,
        partition=partition,
    )
    lines = [
        f"{e.topic}-{e.partition}: version {e.version}, {e.files} files "
        f"({e.bytes} bytes) -> {e.location}"
        for e in done
    ]
    if not done:
        lines.append("nothing published" + (" for that selection" if topic else ""))
    return Reply(tuple(lines))
