"""``segcompact materialize``: the due partitions (or those selected, ``force``: due or not)
re-materialised now."""

from __future__ import annotations

from segcompact.app.due import NOTHING_DUE, nothing_due_now
from segcompact.app.preconditions import lease, load
from segcompact.app.reply import EXIT_DATA, Reply
from segcompact.app.session import session


def materialize(
    config_path: str,
    *,
    topic: str | None,
    partition: int | None,
    force: bool,
    jvm_output: str | None,
) -> Reply:
    """A line per partition written; an error line per partition that could not be (now
    uncleanable: the others were published), exit code 1 then."""
    config = load(config_path, writes=True)
    with lease(config, "materialize"):
        if not force and nothing_due_now(config, erasure=False, topic=topic, partition=partition):
            return Reply((NOTHING_DUE,))
        from segcompact.spark.job import Compactor

        compactor = Compactor(session(config, jvm_output), config)
        results = compactor.materialize(topic=topic, partition=partition, force=force)
    lines = [
        f"{r['topic']}-{r['partition']}: version {r['version']}, {r['records']} records in "
        f"{r['segments']} segments ({r['bytes']} bytes); {', '.join(r['reasons'])}"
        for r in results
    ]
    failed = compactor.materializer.failed
    errors = [f"segcompact: error: {t}-{p}: {reason}" for (t, p), reason in sorted(failed.items())]
    if not results and not failed:
        lines.append(NOTHING_DUE)
    return Reply(tuple(lines), tuple(errors), EXIT_DATA if failed else 0)
