"""What a command checks before any work, each in one place (``segcompact.app.preconditions``,
the ledger's secret in ``keyhash.job_secret``): a clear one-line error naming what is wrong."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

import pytest

from segcompact.app.preconditions import load, serve_metrics, table_paths
from segcompact.erasure.keyhash import SECRET_VARIABLE, job_secret
from segcompact.errors import ConfigError, UsageError
from segcompact.metrics import JobMetrics
from tests.support.config import write_config

SECRET = "a secret of enough bytes"
SLA = {"t": {"gdpr.deletion.sla.ms": 86_400_000}}


def test_the_secret_is_needed_for_a_topic_with_an_sla_or_to_hash_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    plain = load(str(write_config(tmp_path / "plain", [tmp_path / "segments"])))
    with_sla = str(write_config(tmp_path / "sla", [tmp_path / "segments"], topics=SLA))
    assert job_secret(plain) is None
    with pytest.raises(ConfigError, match=f"^{SECRET_VARIABLE} is not set"):
        job_secret(plain, always=True)  # verify-erasure hashes the key it is asked about
    load(with_sla)  # a read-only command writes no ledger row
    with pytest.raises(ConfigError, match=r"a topic has gdpr\.deletion\.sla\.ms"):
        load(with_sla, writes=True)
    monkeypatch.setenv(SECRET_VARIABLE, SECRET)
    assert job_secret(load(with_sla, writes=True)) == SECRET.encode()
    assert job_secret(plain, always=True) == SECRET.encode()


def test_a_table_named_in_a_catalog_is_refused_where_its_files_are_read(tmp_path: Path) -> None:
    config = load(str(write_config(tmp_path, [tmp_path / "segments"])))
    table_paths(config, "verify-erasure")
    state = dataclasses.replace(config.state, ledger_table="main.db.ledger")
    with pytest.raises(UsageError) as refused:
        table_paths(dataclasses.replace(config, state=state), "verify-erasure")
    assert str(refused.value) == (
        "[state] ledger_table = 'main.db.ledger' is a catalog name: verify-erasure reads the "
        "table's files and needs its path"
    )


def test_a_metrics_port_in_use_is_the_configs_mistake() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"^\[metrics\] port = {port}: cannot serve on "):
            serve_metrics(JobMetrics(), "127.0.0.1", port)
