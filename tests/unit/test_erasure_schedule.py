"""The deletion SLA's pure parts: the schedule, outcomes, retention, the secret and key hashes."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest

from segcompact.config import parse_config
from segcompact.config.sla import retention_ms, smallest_sla_ms
from segcompact.erasure.keyhash import SECRET_VARIABLE, key_hash, ledger_secret
from segcompact.erasure.schedule import (
    ROUND_STAGES,
    STAGES,
    Status,
    erasure_due,
    outcome,
    percentile,
)
from segcompact.errors import ConfigError
from tests.support.config import located

SOURCE = {"source": {"paths": ["in"]}}
HOUR = 3_600_000


def config(**sections: Any) -> Any:
    return parse_config(located({**SOURCE, **sections}), "c.toml")


def test_retention_is_a_quarter_of_the_smallest_sla_at_most_seven_days() -> None:
    cfg = config(
        defaults={"gdpr.deletion.sla.ms": 30 * 24 * HOUR},
        topics={
            "fast": {"gdpr.deletion.sla.ms": 4 * HOUR},
            "none": {"gdpr.deletion.sla.ms": "none"},
        },
    )
    assert smallest_sla_ms(cfg) == 4 * HOUR
    assert retention_ms(cfg) == HOUR
    assert retention_ms(config(defaults={"gdpr.deletion.sla.ms": 90 * 24 * HOUR})) == 7 * 24 * HOUR
    assert retention_ms(config()) is None  # no SLA: Delta's defaults stay
    pinned = config(state={"deleted_file_retention_ms": 0}, defaults={"gdpr.deletion.sla.ms": HOUR})
    assert retention_ms(pinned) == 0


@pytest.mark.parametrize(
    ("sections", "named"),
    [
        ({"stream": {"materialize_check_interval_ms": 900_001}}, "materialize_check_interval_ms"),
        ({"stream": {"trigger_interval": "16 minutes"}}, "trigger_interval"),
        ({"state": {"deleted_file_retention_ms": 900_001}}, "deleted_file_retention_ms"),
    ],
)
def test_an_sla_the_schedule_cannot_meet_is_refused_naming_the_key(
    sections: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=f"gdpr.deletion.sla.ms = {HOUR} cannot be met.*{named}"):
        config(defaults={"gdpr.deletion.sla.ms": HOUR}, **sections)
    config(defaults={"gdpr.deletion.sla.ms": HOUR + 4}, **{k: {} for k in sections})


def test_unnamed_tables_sit_beside_the_state_table() -> None:
    cfg = config(state={"table": "/data/job-a/state", "young_table": "/elsewhere/young"})
    assert cfg.state.partitions_table == "/data/job-a/state_partitions"
    assert cfg.state.ledger_table == "/data/job-a/state_deletion_ledger"
    assert cfg.state.young_table == "/elsewhere/young"
    other = config(state={"table": "/data/job-b/state"})
    assert other.state.pending_table != cfg.state.pending_table


def test_erasure_is_due_at_a_quarter_of_the_sla() -> None:
    assert not erasure_due(1_000, 100, 1_024)
    assert erasure_due(1_000, 100, 1_025)


def test_erasure_due_before_the_next_upkeep_is_due_now() -> None:
    assert erasure_due(1_000, 100, 1_015, ahead_ms=10)
    assert not erasure_due(1_000, 100, 1_014, ahead_ms=10)
    # Never more than a quarter of the SLA ahead: a change is not erased the moment it lands.
    assert erasure_due(1_000, 100, 1_000, ahead_ms=1_000)
    assert not erasure_due(1_000, 100, 999, ahead_ms=1_000)


def test_outcome_met_breached_and_pending() -> None:
    done = {s: 10 * i for i, s in enumerate(STAGES)}
    assert outcome(done, STAGES, 100, 200) == outcome(done, STAGES, 50, 0).__class__(
        Status.MET, 50, None
    )
    late = {**done, "vacuumed": 120, "materialized": 130, "versions_removed": 140}
    result = outcome(late, STAGES, 100, 200)
    assert (result.status, result.breach_stage, result.completed_ms) == (
        Status.BREACHED,
        "materialized",  # the first stage done late, in the order a round does them
        140,
    )
    half = {"purged": 10}
    assert outcome(half, ROUND_STAGES, 100, 90).status == Status.PENDING
    stuck = outcome(half, ROUND_STAGES, 100, 101)
    assert (stuck.status, stuck.breach_stage, stuck.completed_ms) == (
        Status.BREACHED,
        "materialized",
        None,
    )


def test_percentile_nearest_rank() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5], 0.99) == 5
    values = list(range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (
        50,
        99,
        100,
    )


def test_key_hash_is_an_hmac_of_length_prefixed_fields() -> None:
    secret = b"0123456789abcdef"
    expected = hmac.new(
        secret, b"\x00\x05users" + (3).to_bytes(4, "big") + b"alice@example.com", hashlib.sha256
    ).hexdigest()
    assert key_hash(secret, "users", 3, b"alice@example.com") == expected
    assert key_hash(secret, "users", 3, b"x") != hashlib.sha256(b"x").hexdigest()
    # Field boundaries matter: ("ab", key "c") and ("a", key "bc") differ.
    assert key_hash(secret, "ab", 0, b"c") != key_hash(secret, "a", 0, b"bc")
    assert key_hash(b"another secret!!", "users", 3, b"x") != key_hash(secret, "users", 3, b"x")


def test_the_secret_must_be_set_and_long_enough() -> None:
    with pytest.raises(ConfigError, match=f"{SECRET_VARIABLE} is not set"):
        ledger_secret(environ={})
    with pytest.raises(ConfigError, match="has 5 bytes"):
        ledger_secret(environ={SECRET_VARIABLE: "short"})
    assert ledger_secret(environ={SECRET_VARIABLE: "x" * 16}) == b"x" * 16
