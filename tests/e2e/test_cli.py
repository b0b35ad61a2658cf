"""The ``segcompact`` command line as a user runs it: a subprocess on a generated log dir."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyspark.sql import SparkSession
from tqdm import tqdm

from segcompact.app.demo import next_steps, segcompact_command
from segcompact.config import CompactorConfig, load_config
from segcompact.erasure.keyhash import SECRET_VARIABLE
from segcompact.format.segment import SegmentReader
from segcompact.lease import job_lease
from segcompact.storage import LocalInputFile
from tests.e2e.harness import (
    RETENTION_MS,
    Log,
    check_horizons,
    cli_env,
    model_of,
    model_output,
    model_pending,
    model_state,
    output_records,
    pending_records,
    run_cli,
    run_cli_on_a_terminal,
    state_table,
    without_times,
    write_config,
    write_log,
)
from tests.support.model import ReferenceModel


@dataclass(frozen=True)
class OnceRun:
    """``segcompact run --config F --once`` done on a generated log."""

    work: Path
    config_path: Path
    config: CompactorConfig
    log: Log
    model: ReferenceModel
    result: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory, spark_conf_dir: Path) -> OnceRun:
    work = tmp_path_factory.mktemp("cli")
    log = write_log(work / "in", 20261122)
    config_path = write_config(work, [log.root])
    (work / "tmp").mkdir()
    result = run_cli_on_a_terminal(
        "run",
        "--config",
        config_path,
        "--once",
        cwd=work,
        spark_conf_dir=spark_conf_dir,
        env={"TMPDIR": str(work / "tmp")},
    )
    config = load_config(config_path)
    # The active segment of every partition waits for its roll (rolled_only = true).
    model = model_of(config, log.records(log.rolled()), now_ms=0)
    return OnceRun(work, config_path, config, log, model, result)


@pytest.mark.spark
def test_run_once_compacts_the_rolled_segments(spark: SparkSession, once: OnceRun) -> None:
    assert once.result.returncode == 0, once.result.stderr
    assert "Traceback" not in once.result.stderr
    segments = sum(len(paths) for paths in once.log.rolled().values())
    (summary,) = once.result.stdout.splitlines()  # what it did, in one line
    assert summary.startswith(f"run --once: {segments} segments (")
    assert summary.endswith(
        f"{len(once.log.rolled())} partitions materialised; 0 partitions uncleanable"
    )
    assert not (once.work / "spark-warehouse").exists()  # nothing unnamed in the working dir
    # Nor left in the temporary directory: Spark's output and scratch warehouse are removed
    # after a run that succeeded.
    assert list((once.work / "tmp").iterdir()) == []
    # The generated log must exercise what is compared below.
    assert once.model.pending, "a transaction should wait for a marker in an active segment"
    assert any(r.tombstone for r in once.model.state.values())
    assert {t for t, _, _ in once.model.state} == {"orders", "users"}

    rows = state_table(spark, once.config)
    assert without_times(rows) == without_times(model_state(once.model))
    check_horizons(rows, RETENTION_MS)
    assert pending_records(spark, once.config) == model_pending(once.model)
    # Every partition is due (never materialised: dirty ratio 1): its output is its state.
    assert output_records(once.config) == model_output(once.model)


@pytest.mark.spark
def test_run_once_on_a_terminal_shows_its_progress_in_bytes_of_segments(once: OnceRun) -> None:
    total = sum(p.stat().st_size for paths in once.log.rolled().values() for p in paths)
    size = tqdm.format_sizeof(total, divisor=1024)
    last = once.result.stderr.replace("\r\n", "\r").split("\r")
    bars = [line for line in last if line.startswith("segments:")]
    assert bars, once.result.stderr
    # Known from the start, and reached by the end.
    assert all(f"/{size}B " in bar for bar in bars), bars
    assert bars[-1].startswith("segments: 100%") and f" {size}B/{size}B " in bars[-1], bars[-1]


@pytest.mark.spark
def test_status_json_reports_every_partition(
    spark: SparkSession, once: OnceRun, spark_conf_dir: Path
) -> None:
    assert once.result.returncode == 0, once.result.stderr
    result = run_cli(
        "status",
        "--config",
        once.config_path,
        "--format",
        "json",
        cwd=once.work,
        spark_conf_dir=spark_conf_dir,
    )
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)["partitions"]
    assert json.loads(result.stdout)["skipped"] == []  # every directory is a partition's

    rows = state_table(spark, once.config)
    keys = Counter((t, p) for t, p, _ in rows)
    tombstones = Counter((t, p) for (t, p, _), r in rows.items() if r["tombstone"])
    horizons: dict[tuple[str, int], int] = {}
    for (t, p, _), r in rows.items():
        if r["delete_horizon"] is not None:
            horizons[(t, p)] = min(horizons.get((t, p), r["delete_horizon"]), r["delete_horizon"])

    rolled = once.log.rolled()
    assert [(s["topic"], s["partition"]) for s in status] == sorted(rolled)
    for s in status:
        tp = (s["topic"], s["partition"])
        *_, last_batch = SegmentReader(LocalInputFile(rolled[tp][-1]))
        data = [r for r in once.log.records({tp: rolled[tp]}) if not r.is_control]
        assert s["log_end_offset"] == last_batch.last_offset + 1, tp
        # Offsets are dense: the active segment, not read yet, starts there.
        assert s["log_end_offset"] == int(once.log.segments[tp][-1].stem), tp
        assert s["log_start_offset"] == 0
        assert s["records"] == len(data), tp
        assert s["keys"] == keys[tp] == sum(1 for k in once.model.state if k[:2] == tp), tp
        assert s["keyless_records"] == once.model.keyless[tp], tp
        assert s["tombstones_pending"] == tombstones[tp], tp
        assert s["next_horizon_ms"] == horizons.get(tp), tp
        assert 0.0 <= s["dirty_ratio"] <= 1.0
        assert s["uncleanable"] is None
    assert sum(once.model.keyless.values()) > 0, "the generated log should have keyless records"

    # The same rows for people: one line each, at most 120 columns, no epoch milliseconds.
    text = run_cli("status", "--config", once.config_path, cwd=once.work).stdout.splitlines()
    assert text[0].split()[:3] == ["partition", "records", "keys"]
    assert [line.split()[:3] for line in text[1:]] == [
        [f"{s['topic']}-{s['partition']}", str(s["records"]), str(s["keys"])] for s in status
    ]
    assert all(len(line) <= 120 for line in text)
    assert not any(str(s["next_horizon_ms"]) in "".join(text) for s in status)


# --- mistakes a user makes: one line, exit code 2, before any JVM starts -------------------

_GOOD = """\
[source]
paths = ["in"]
[state]
table = "state"
partitions_table = "partitions"
pending_table = "pending"
ledger_table = "ledger"
[output]
path = "out"
[stream]
checkpoint = "chk"
"""

BAD_CONFIGS = {
    "toml-syntax": (_GOOD + "[defaults\n", ["invalid TOML"]),
    "unknown-key": (
        _GOOD + '[defaults]\n"delete.retention.msec" = 5\n',
        ["delete.retention.msec", "unknown key"],
    ),
    "unknown-section-key": (_GOOD.replace("[stream]\n", "[stream]\ntrigger = 1\n"), ["trigger"]),
    "wrong-type": (
        _GOOD + '[defaults]\n"delete.retention.ms" = "one day"\n',
        ["delete.retention.ms", '"one day"', "expected an integer"],
    ),
    "wrong-type-bool": (
        _GOOD.replace('paths = ["in"]', 'paths = ["in"]\nrolled_only = "yes"'),
        ["rolled_only", "expected true or false"],
    ),
    "max-lag-below-min-lag": (
        _GOOD
        + '[defaults]\n"min.compaction.lag.ms" = 60000\n'
        + '[topics."orders"]\n"max.compaction.lag.ms" = 1000\n',
        ["max.compaction.lag.ms", "1000", "min.compaction.lag.ms", "60000"],
    ),
    "sla-long-max": (
        _GOOD + '[defaults]\n"gdpr.deletion.sla.ms" = 9223372036854775807\n',
        ["gdpr.deletion.sla.ms", "expected an integer from 1 to 3153600000000 (100 years)"],
    ),
    "lease-long-max": (
        _GOOD + "lease_timeout_ms = 9223372036854775807\n",
        ["[stream] lease_timeout_ms", "from 3000 to 3153600000000 (100 years)"],
    ),
    "trigger-zero": (
        _GOOD + 'trigger_interval = "0 seconds"\n',
        ["[stream] trigger_interval", "from 100 milliseconds to 100 years"],
    ),
    "output-is-source": (_GOOD.replace('path = "out"', 'path = "./in/"'), ["[output] path"]),
    "nested-too-deeply": (_GOOD + "x = " + "[\n" * 100_000, ["nested too deeply"]),
}


def _assert_usage_error(result: subprocess.CompletedProcess[str], *mentions: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for mention in mentions:
        assert mention in lines[0], (mention, lines[0])
    # Refused before Spark started: no JVM, no log4j, no stack trace of either language.
    for sign in ("Traceback", "SparkSession", "log4j", "WARN", "Exception", "\tat "):
        assert sign not in result.stderr, (sign, result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["run", "status"])
@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_a_bad_config_is_one_line_and_exit_2(tmp_path: Path, case: str, command: str) -> None:
    text, mentions = BAD_CONFIGS[case]
    config = tmp_path / "compactor.toml"
    config.write_text(text)
    result = run_cli(command, "--config", config, cwd=tmp_path)
    _assert_usage_error(result, str(config), *mentions)


@pytest.mark.parametrize("command", ["run", "status"])
def test_a_missing_config_file_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nowhere" / "compactor.toml"
    once = ["--once"] if command == "run" else []
    result = run_cli(command, "--config", missing, *once, cwd=tmp_path)
    _assert_usage_error(result, str(missing), "cannot read config file")


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["compact"], ["invalid choice", "'compact'"]),
        ([], ["command"]),
        (["run"], ["--config"]),
        (["run", "--once"], ["--config"]),
        (["run", "--config"], ["--config", "expected one argument"]),
        (["status", "--config", "c.toml", "--format", "yaml"], ["--format", "'yaml'"]),
        (["run", "--config", "c.toml", "--forever"], ["unrecognized arguments", "--forever"]),
    ],
    ids=[
        "unknown-command",
        "no-command",
        "run-no-config",
        "once-no-config",
        "config-no-value",
        "bad-format",
        "unknown-option",
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], mentions: list[str]
) -> None:
    _assert_usage_error(run_cli(*args, cwd=tmp_path), *mentions)


def test_demo_ends_with_materialised_segments_and_says_where(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    config = Path(__file__).resolve().parents[2] / "conf" / "compactor.toml"
    work = tmp_path / "work"
    proc = run_cli(
        "demo",
        "--config",
        config,
        "--workdir",
        work,
        cwd=tmp_path,
        spark_conf_dir=spark_conf_dir,
        env={SECRET_VARIABLE: ""},  # the secret is the file the config names, made by the demo
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == ""  # Spark's log lines and the JVM's warnings go to a file
    secret = work / "data" / "ledger.secret"
    assert f"wrote a new ledger secret to {secret} (mode 0600)" in proc.stdout
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    # "sessions" has a 10-minute SLA: the demo erases what is pending at once (purge --force),
    # so its report has completed erasures, every one in time. (On a slow machine the run's
    # own upkeep may have completed the rounds before the purge, which then has none to do.)
    assert re.search(r"erasure \(purge --force\): \d+ round\(s\) completed", proc.stdout)
    report = proc.stdout[proc.stdout.index("deletion SLA") :]
    assert "sessions-0" in report and "sessions-1" in report and "breaches:" not in report
    summary = re.search(r"(\d+) of (\d+) met \(.*\), (\d+) pending, 0 breached", report)
    assert summary is not None and int(summary.group(1)) >= 1, report
    # Its next steps, pasted into a new shell (no secret in its environment) where it ran.
    steps = [line[6:] for line in proc.stdout[proc.stdout.index("next: ") :].splitlines()]
    assert steps[0] == f"cd {work}" and len(steps) == 4  # then status, sla and dump
    shell = subprocess.run(
        " && ".join(steps),
        shell=True,
        cwd=tmp_path,
        env={k: v for k, v in cli_env().items() if k != SECRET_VARIABLE},
        capture_output=True,
        text=True,
        check=False,
    )
    assert shell.returncode == 0, shell.stderr
    assert "sessions" in shell.stdout and "Dumping " in shell.stdout
    # The HTML report the printed sla step wrote draws the completed erasures.
    html = (work / "sla.html").read_text(encoding="utf-8")
    assert html.count('<circle class="mark"') >= 1 and "mark breached" not in html
    assert "deadline of sessions: 10 min" in html and f"{config}" in html
    compacted = work / "data" / "compacted"
    partitions = sorted(p for p in compacted.iterdir() if not p.name.startswith("."))
    assert len(partitions) == 10  # the five topics of conf/compactor.toml, two partitions each
    for directory in partitions:
        assert directory.is_symlink() and f"  {directory}/ -> " in proc.stdout
        (log,) = directory.glob("*.log")
        assert any(batch.records_count for batch in SegmentReader(LocalInputFile(log)))
        assert log.with_suffix(".index").exists() and log.with_suffix(".timeindex").exists()
    assert f"segcompact dump {compacted}/" in proc.stdout


def test_version_is_one_line_and_exit_0(tmp_path: Path) -> None:
    result = run_cli("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert re.fullmatch(r"segcompact \d+\.\d+\.\d+\S*\n", result.stdout), result.stdout


@pytest.mark.parametrize("where", ["repository", "elsewhere"])
def test_the_demo_names_a_segcompact_a_new_shell_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """From the folder holding .venv (the repository root after make): .venv/bin/segcompact;
    from anywhere else, or after a cd, the absolute path."""
    cwd = Path(sys.executable).parents[2] if where == "repository" else tmp_path
    monkeypatch.chdir(cwd)
    command = segcompact_command(absolute=False)
    if where == "repository":
        assert command == ".venv/bin/segcompact"
    else:
        assert os.path.isabs(command)
    assert segcompact_command(absolute=True) == str(Path(sys.executable).parent / "segcompact")
    shell = subprocess.run(
        f"{command} --version", shell=True, env=cli_env(), capture_output=True, text=True
    )
    assert shell.returncode == 0 and shell.stdout.startswith("segcompact "), shell.stderr
    assert next_steps("conf/compactor.toml", None, None)[0] == (
        f"{command} status --config conf/compactor.toml"
    )


def test_configs_describe_shows_every_topics_settings_and_sources(tmp_path: Path) -> None:
    config = tmp_path / "compactor.toml"
    config.write_text(_GOOD + '[topics."orders"]\n"compaction.strategy" = "timestamp"\n')
    result = run_cli("configs", "--config", config, "--describe", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    blocks = result.stdout.split("All configs for ")[1:]
    assert [b.splitlines()[0] for b in blocks] == [
        "topic orders are:",
        "topics not named in [topics] are:",
    ]
    assert "  compaction.strategy=timestamp sensitive=false synonyms={TOPIC_CONFIG:" in blocks[0]
    (tmp_path / "in" / "x-0").mkdir(parents=True)  # a topic the source holds exists
    one = run_cli("configs", "--config", config, "--describe", "--topic", "x", cwd=tmp_path)
    assert one.stdout.startswith("All configs for topic x are:") and one.stdout.count("All") == 1
    nosuch = run_cli("configs", "--config", config, "--describe", "--topic", "nosuch", cwd=tmp_path)
    _assert_usage_error(nosuch, "--topic 'nosuch': no such topic")
    # A topic the job's tables hold exists too (its source directories may be gone).
    write_deltalake(tmp_path / "partitions", pa.table({"topic": ["gone"], "partition": [0]}))
    held = run_cli("configs", "--config", config, "--describe", "--topic", "gone", cwd=tmp_path)
    assert held.returncode == 0 and held.stdout.startswith("All configs for topic gone are:")
    bad = run_cli("configs", "--config", config, "--describe", "--topic", "a/b", cwd=tmp_path)
    _assert_usage_error(bad, "--topic 'a/b': not a Kafka topic name")


def test_a_metrics_port_in_use_is_exit_2_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "compactor.toml"
        config.write_text(_GOOD + f'[metrics]\nport = {port}\nhost = "127.0.0.1"\n')
        result = run_cli("run", "--config", config, "--once", cwd=tmp_path)
    _assert_usage_error(result, f"[metrics] port = {port}: cannot serve on 127.0.0.1:{port}")
    assert not (tmp_path / "state").exists() and not (tmp_path / "chk").exists()


def test_run_with_a_source_root_that_does_not_exist_is_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "compactor.toml"
    config.write_text(_GOOD)  # its root "in" is not there
    result = run_cli("run", "--config", config, "--once", cwd=tmp_path)
    _assert_usage_error(result, "source root", f"{tmp_path / 'in'} does not exist")


def test_a_failed_streaming_query_is_one_line_and_exit_1(
    tmp_path: Path, spark_conf_dir: Path
) -> None:
    (tmp_path / "in").mkdir()
    config = tmp_path / "compactor.toml"
    config.write_text(_GOOD)
    query = tmp_path / "chk" / "query"
    (query / "offsets").mkdir(parents=True)
    (query / "metadata").write_text('{"id":"5a5e0b9c-2f4e-4d8a-9a57-3d2f0f6c1e11"}\n')
    (query / "offsets" / "0").write_text("v1\nnot an offset log entry\n")  # damaged
    (tmp_path / "tmp").mkdir()
    result = run_cli(
        "run",
        "--config",
        config,
        "--once",
        cwd=tmp_path,
        spark_conf_dir=spark_conf_dir,
        env={"TMPDIR": str(tmp_path / "tmp")},
    )
    assert result.returncode == 1, (result.returncode, result.stderr[-3000:])
    (line,) = result.stderr.splitlines()  # Spark's own lines went to a file, named here
    assert line.startswith("segcompact: error: streaming query failed: "), line
    spark_output = re.search(r"\(Spark's output: (\S+segcompact-run-\d+\.log)\)", line)
    assert spark_output is not None, line
    assert Path(spark_output[1]).parent == tmp_path / "tmp"  # kept after the failure
    assert "ERROR" in Path(spark_output[1]).read_text()  # what Spark said about it


@pytest.mark.parametrize("command", [["run", "--once"], ["materialize"], ["purge"]])
def test_a_second_job_on_the_same_locations_is_refused_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "in").mkdir()
    config = tmp_path / "compactor.toml"
    config.write_text(_GOOD)
    with job_lease(load_config(config).with_base_dir(tmp_path), "run"):
        result = run_cli(command[0], "--config", config, *command[1:], cwd=tmp_path)
    assert result.returncode == 1, (result.returncode, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("segcompact: error: "), line
    assert f"is in use by `segcompact run` on {socket.gethostname()} (pid {os.getpid()})" in line
    for sign in ("Traceback", "SparkSession", "log4j", "WARN"):  # refused before Spark
        assert sign not in result.stderr, (sign, result.stderr)
    assert not (tmp_path / "state" / "_delta_log").exists()


# --- every command, a bad config and its own bad arguments: one line, exit 2, nothing written --

_COMMANDS = {
    "run": ["--once"],
    "status": [],
    "materialize": ["--force"],
    "delete-records": ["--offset-json-file", "offsets.json"],
    "purge": [],
    "sla": [],
    "verify-erasure": ["--topic", "t", "--partition", "0", "--key", "k"],
    "export": ["--to", "exported"],
}
_VERIFY = ["verify-erasure", "--config", "compactor.toml", "--topic", "t", "--partition", "0"]
_OFFSETS = '{"partitions": [{"topic": "t", "partition": 0, "offset": 1}]}'


def _files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*"))


def _refused(tmp_path: Path, args: list[str], *mentions: str, config: str = _GOOD) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "compactor.toml").write_text(config)
    (tmp_path / "offsets.json").write_text(_OFFSETS)
    before = _files(tmp_path)
    _assert_usage_error(run_cli(*args, cwd=tmp_path), *mentions)
    assert _files(tmp_path) == before, "a refused command wrote something"


@pytest.mark.parametrize("command", sorted(_COMMANDS))
@pytest.mark.parametrize("case", ["unknown-key", "wrong-type"])
def test_every_command_refuses_a_bad_config_before_writing(
    tmp_path: Path, command: str, case: str
) -> None:
    text, mentions = BAD_CONFIGS[case]
    args = [command, "--config", "compactor.toml", *_COMMANDS[command]]
    _refused(tmp_path, args, "compactor.toml", *mentions, config=text)


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["materialize", "--config", "compactor.toml", "--partition", "x"], ["invalid int", "'x'"]),
        (["run", "--config", "compactor.toml", "--uncleanable-ok"], ["only with --once"]),
        (["delete-records", "--config", "compactor.toml"], ["--offset-json-file"]),
        (
            ["delete-records", "--config", "compactor.toml", "--offset-json-file", "none.json"],
            ["none.json: no such file"],
        ),
        (
            ["delete-records", "--config", "compactor.toml", "--offset-json-file", "in"],
            ["in: cannot read"],
        ),
        (_VERIFY, ["one of the arguments --key --key-b64 is required"]),
        ([*_VERIFY, "--key-b64", "!!"], ["--key-b64 '!!': not base64"]),
        ([*_VERIFY, "--key", "k", "--key-b64", "aw=="], ["not allowed with argument"]),
        (["sla", "--config", "compactor.toml", "--format", "pdf"], ["invalid choice", "'pdf'"]),
        (["export", "--config", "compactor.toml"], ["--to"]),
        (["export", "--config", "compactor.toml", "--to", "s3x://b/x"], ["--to", "unknown scheme"]),
        (["dump", "nowhere.log"], ["nowhere.log: no such file"]),
        (["dump", "compactor.toml"], ["compactor.toml: not a segment's .log"]),
        (["dump", "in"], ["in: is a directory"]),
        (["export", "--config", "compactor.toml", "--to", ""], ["--to: empty path"]),
        (["demo", "--config", "missing.toml"], ["missing.toml", "cannot read config file"]),
    ],
)
def test_each_commands_own_bad_arguments_are_refused_before_writing(
    tmp_path: Path, args: list[str], mentions: list[str]
) -> None:
    _refused(tmp_path, args, *mentions)


@pytest.mark.parametrize("spelling", ["absolute", "symlink"])
def test_an_output_in_the_source_in_any_spelling_is_refused_before_writing(
    tmp_path: Path, spelling: str
) -> None:
    """The issue's case: the output is the source root, spelled otherwise (the source written
    absolute, or reached through a symlink): exit 2 naming both, nothing written."""
    (tmp_path / "src").mkdir()
    (tmp_path / "link").symlink_to("src")
    source, output = (f"{tmp_path}/src/", "src") if spelling == "absolute" else ("src", "link")
    config = _GOOD.replace('["in"]', json.dumps([source])).replace('"out"', json.dumps(output))
    (tmp_path / "compactor.toml").write_text(config)
    before = _files(tmp_path)
    _assert_usage_error(
        run_cli("run", "--once", "--config", "compactor.toml", cwd=tmp_path),
        f'[output] path = "{output}" (at "{os.path.realpath(tmp_path / "src")}")',
        f"[source] paths = {json.dumps(source)}",
    )
    assert _files(tmp_path) == before
