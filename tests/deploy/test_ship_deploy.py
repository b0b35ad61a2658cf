"""deploy/kubernetes/ship-sidecar.yaml and deploy/systemd/: the shipper beside a broker.

No cluster, no systemd manager here: the manifests are parsed, their configs loaded by the
shipper's own loader, the commands parsed by segcompact's own parser, and the unit checked by
``systemd-analyze verify``.
"""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from segcompact.cli import build_parser
from segcompact.config import load_config
from segcompact.config.ship import load_ship_config

REPO = Path(__file__).resolve().parents[2]
SIDECAR = REPO / "deploy" / "kubernetes" / "ship-sidecar.yaml"
JOB_CONFIG = REPO / "deploy" / "kubernetes" / "compactor.toml"
UNIT = REPO / "deploy" / "systemd" / "segcompact-ship.service"
VM_CONFIG = REPO / "deploy" / "systemd" / "ship.toml"


def _documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(SIDECAR.read_text()) if d is not None]


def test_the_sidecar_ships_what_the_job_reads_from_a_read_only_log_dir(tmp_path: Path) -> None:
    config_map, patch = _documents()
    assert (config_map["kind"], patch["kind"]) == ("ConfigMap", "StatefulSet")
    path = tmp_path / "ship.toml"
    path.write_text(config_map["data"]["ship.toml"])
    ship = load_ship_config(path)
    job = load_config(JOB_CONFIG)
    assert ship.ship.to in job.source.paths
    assert job.source.rolled_only is False  # every shipped object is whole

    pod = patch["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    args = build_parser().parse_args(container["command"][1:])
    assert container["command"][0] == "segcompact" and args.command == "ship"
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    config_volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "ship-config")
    assert config_volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert args.config == f"{mounts['ship-config']['mountPath']}/ship.toml"
    data = mounts["data"]
    assert data["readOnly"] is True
    assert all(d.startswith(data["mountPath"]) for d in ship.ship.log_dirs)
    port = ship.metrics.port
    assert [p["containerPort"] for p in container["ports"]] == [port]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    assert ship.metrics.host == "0.0.0.0"  # scraped from outside the pod


def test_the_systemd_unit_runs_the_shipper_and_stops_it_with_sigterm(tmp_path: Path) -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(UNIT)
    service = unit["Service"]
    command = shlex.split(service["ExecStart"])
    args = build_parser().parse_args(command[1:])
    assert command[0].endswith("/segcompact") and args.command == "ship" and not args.once
    assert service["KillSignal"] == "SIGTERM" and service["Restart"] == "always"
    ship = load_ship_config(VM_CONFIG)
    assert args.config == "/etc/segcompact/ship.toml"
    assert all(d.startswith(service["ReadOnlyPaths"]) for d in ship.ship.log_dirs)
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return  # parsed above; verify needs systemd's own tool
    runnable = tmp_path / UNIT.name
    runnable.write_text(UNIT.read_text().replace(command[0], sys.executable))
    done = subprocess.run(
        [analyze, "verify", str(runnable)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
