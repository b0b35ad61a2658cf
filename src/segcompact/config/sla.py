"""What a deletion SLA asks of the configuration: the smallest SLA of any topic, the retention
of removed files it sets, and whether the configured waits let the erasure schedule
(:mod:`segcompact.erasure.schedule`) meet it, checked when the file is read.
"""

from __future__ import annotations

from segcompact.config.model import CompactorConfig, TopicConfig

DAY_MS = 86_400_000
MAX_RETENTION_MS = 7 * DAY_MS  # Delta's own default: never keep removed files longer
QUARTER = 4  # each wait in the erasure schedule takes at most 1/QUARTER of the SLA


def smallest_sla_ms(config: CompactorConfig) -> int | None:
    """The smallest ``gdpr.deletion.sla.ms`` of any topic the tables may hold."""
    slas = [t.gdpr_deletion_sla_ms for t in _topics(config)]
    return min((s for s in slas if s is not None), default=None)


def retention_ms(config: CompactorConfig) -> int | None:
    """``delta.deletedFileRetentionDuration`` for segcompact's tables: as configured, else a
    quarter of the smallest SLA (at most Delta's 7 days); None leaves Delta's default."""
    if config.state.deleted_file_retention_ms is not None:
        return config.state.deleted_file_retention_ms
    sla = smallest_sla_ms(config)
    return None if sla is None else min(sla // QUARTER, MAX_RETENTION_MS)


def unreachable(config: CompactorConfig, trigger_ms: int) -> str | None:
    """Why the configured SLA cannot be met by the erasure schedule, or None."""
    sla = smallest_sla_ms(config)
    if sla is None:
        return None
    quarter = sla // QUARTER
    waits = (
        ("[state] deleted_file_retention_ms", retention_ms(config) or 0),
        ("[stream] materialize_check_interval_ms", config.stream.materialize_check_interval_ms),
        ("[stream] trigger_interval", trigger_ms),
    )
    for name, value in waits:
        if value > quarter:
            return (
                f"gdpr.deletion.sla.ms = {sla} cannot be met: {name} is {value} ms, expected at "
                f"most a quarter of the SLA ({quarter} ms; erasure is due at a quarter of the SLA "
                "and each wait may take a quarter)"
            )
    return None


def _topics(config: CompactorConfig) -> list[TopicConfig]:
    return [config.defaults, *config.topics.values()]
