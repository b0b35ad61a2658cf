"""deploy/databricks/: the bundle against the Databricks CLI's own bundle schema, the config its
job runs with, and the job's entry point run on local Spark with that config's shape.

No workspace here: what can be checked without one is checked against the real artefacts (the
schema ``databricks bundle validate`` uses, segcompact's config loader, and
``streaming/databricks_task.py`` run as the job runs it, with the tables named in a catalog:
a local Hive metastore stands in for Unity Catalog, local folders for the volumes).
"""

from __future__ import annotations

import base64
import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from segcompact.config import CompactorConfig, is_table_name, load_config
from tests.e2e.harness import (
    RUN_TIMEOUT_S,
    cli_env,
    model_of,
    model_output,
    model_state,
    output_records,
    without_times,
    write_log,
)
from tests.support import bundle_schema
from tests.support.spark import JVM_OPTIONS

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "databricks"
BUNDLE = DEPLOY / "databricks.yml"
CONFIG = DEPLOY / "compactor.toml"
TASK = REPO / "streaming" / "databricks_task.py"

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def bundle() -> Doc:
    with BUNDLE.open("rb") as f:
        doc: Doc = yaml.safe_load(f)
    return doc


@pytest.fixture(scope="module")
def check() -> jsonschema.Draft202012Validator:
    """The CLI's bundle schema, unknown top-level keys rejected."""
    try:
        schema = bundle_schema.load()
    except (FileNotFoundError, RuntimeError) as e:
        pytest.skip(f"no bundle schema: {e}; see tests/support/bundle_schema.py")
    return bundle_schema.validator(bundle_schema.strict(schema))


@pytest.fixture(scope="module")
def config() -> CompactorConfig:
    return load_config(CONFIG)


# --- the bundle and the CLI's schema ----------------------------------------------------------


def test_bundle_matches_the_cli_schema(bundle: Doc, check: jsonschema.Draft202012Validator) -> None:
    assert bundle_schema.problems(check, bundle) == []


def _at(doc: Doc, path: str) -> tuple[Any, Any]:
    """The node holding ``path``'s last part, and that part (an index into a list)."""
    node: Any = doc
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node, int(last) if isinstance(node, list) else last


def _set(path: str, value: object) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        node, last = _at(doc, path)
        node[last] = value

    return change


def _drop(path: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        node, last = _at(doc, path)
        del node[last]

    return change


def _rename(path: str, new: str) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        node, last = _at(doc, path)
        node[new] = node.pop(last)

    return change


JOB = "resources.jobs.segcompact"
ONCE = "resources.jobs.segcompact_once"

# (a change, where the errors are, what they say)
BROKEN: dict[str, tuple[Callable[[Doc], None], tuple[str, ...], str]] = {
    "misspelt top-level key": (_rename("bundle", "bundel"), ("(top)",), "'bundel' was unexpected"),
    "no bundle name": (_drop("bundle.name"), ("bundle",), "'name' is a required property"),
    "misspelt task type": (
        _rename(f"{JOB}.tasks.0.spark_python_task", "spark_python_tsk"),
        (f"{JOB}.tasks.0",),
        "'spark_python_tsk' was unexpected",
    ),
    "runs as a string": (
        _set(f"{JOB}.max_concurrent_runs", "one"),
        (f"{JOB}.max_concurrent_runs",),
        "is not of type 'integer'",
    ),
    "unknown pause status": (
        _set(f"{JOB}.continuous.pause_status", "RUNNING"),
        (f"{JOB}.continuous.pause_status",),
        "is not one of",
    ),
    # Both jobs' clusters are one YAML anchor: a mistake there is reported for each.
    "misspelt cluster field": (
        _rename(f"{JOB}.job_clusters.0.new_cluster.num_workers", "num_worker"),
        (f"{JOB}.job_clusters.0.new_cluster", f"{ONCE}.job_clusters.0.new_cluster"),
        "'num_worker' was unexpected",
    ),
    "library as a path": (
        _set(f"{ONCE}.tasks.0.libraries.0", "./dist/segcompact.whl"),
        (f"{ONCE}.tasks.0.libraries.0",),
        "is not of type 'object'",
    ),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_bundle_fails_validation(
    name: str, bundle: Doc, check: jsonschema.Draft202012Validator
) -> None:
    change, where, message = BROKEN[name]
    broken = copy.deepcopy(bundle)
    change(broken)
    found = bundle_schema.problems(check, broken)
    assert [p.split(": ", 1)[0] for p in found if message in p] == list(where), found


# Values for the bundle's variables where the jobs are read as Databricks' Python models have them.
_VARIABLES = {
    "spark_version": "19.0.x-scala2.13",
    "node_type_id": "i3.xlarge",
    "num_workers": 1,
    "service_principal": "",
    "config": "/Workspace/segcompact/compactor.toml",
}


def _resolved(value: Any) -> Any:
    """``value`` with each ``${var.x}`` that is all of a string replaced by a sample value."""
    if isinstance(value, dict):
        return {k: _resolved(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    if isinstance(value, str) and (m := re.fullmatch(r"\$\{var\.(\w+)\}", value)):
        return _VARIABLES[m[1]]
    return value


def test_jobs_read_as_databricks_bundles_models(bundle: Doc) -> None:
    """Always (no schema needed): every job of the bundle is read by ``databricks-bundles``'
    ``Job`` model (PyPI), which rejects unknown fields and wrong types, as a broken copy shows."""
    from databricks.bundles.jobs import Job

    jobs = bundle["resources"]["jobs"]
    assert set(jobs) == {"segcompact", "segcompact_once"}
    for name, job in jobs.items():
        model = Job.from_dict(_resolved(job))
        assert model.tasks and model.max_concurrent_runs == 1, name
    broken = copy.deepcopy(jobs["segcompact"])
    broken["tasks"][0]["spark_python_tasks"] = broken["tasks"][0].pop("spark_python_task")
    with pytest.raises(ValueError, match="Unexpected field 'spark_python_tasks'"):
        Job.from_dict(_resolved(broken))


def test_bundle_names_files_that_exist(bundle: Doc) -> None:
    # Paths in the bundle are relative to databricks.yml.
    for path in bundle["sync"]["paths"]:
        assert (DEPLOY / path).is_dir(), path
    (artifact,) = bundle["artifacts"].values()
    assert (DEPLOY / artifact["path"] / "pyproject.toml").is_file()
    for job in bundle["resources"]["jobs"].values():
        (task,) = job["tasks"]
        assert (DEPLOY / task["spark_python_task"]["python_file"]).resolve() == TASK
        (library,) = task["libraries"]
        assert Path(library["whl"]).name == Path(artifact["files"][0]["source"]).name
    # The sync root is the repository root: the default config is this folder's.
    default = bundle["variables"]["config"]["default"]
    assert default.startswith("${workspace.file_path}/")
    assert REPO / default.removeprefix("${workspace.file_path}/") == CONFIG
    ignored = (DEPLOY / ".gitignore").read_text().split()
    assert {".databricks/", "dist/"} <= set(ignored)


def test_the_job_runs_the_entry_point_with_its_config(bundle: Doc) -> None:
    for name, once in (("segcompact", False), ("segcompact_once", True)):
        job = bundle["resources"]["jobs"][name]
        (task,) = job["tasks"]
        argv = task["spark_python_task"]["parameters"]
        assert argv == ["--config", "{{job.parameters.config}}", *(["--once"] if once else [])]
        assert [p["name"] for p in job["parameters"]] == ["config"]
        assert ("continuous" in job) is not once


# --- the config the job runs with -------------------------------------------------------------

_CREATE = re.compile(r"CREATE (SCHEMA|VOLUME) IF NOT EXISTS ([\w.]+);")


def test_config_has_tables_in_unity_catalog_and_files_in_volumes(config: CompactorConfig) -> None:
    created = _CREATE.findall(CONFIG.read_text())
    schemas = {name for kind, name in created if kind == "SCHEMA"}
    volumes = {name for kind, name in created if kind == "VOLUME"}
    for table in config.state.tables():
        assert is_table_name(table) and table.count(".") == 2, table  # catalog.schema.table
        assert table.rsplit(".", 1)[0] in schemas, table
    for path in (*config.source.paths, config.output.path, config.stream.checkpoint):
        parts = path.split("/")
        assert parts[:2] == ["", "Volumes"] and len(parts) >= 5, path
        assert ".".join(parts[2:5]) in volumes, f"{path}: its volume is not created above"
    config.check_storage()


# --- the entry point ------------------------------------------------------------------------------

# The task file run as Databricks runs it, on a PySpark without 4.2's streaming data source
# module (4.0 and 4.1: Databricks Runtime 17.x and 18).
_ON_OLD_PYSPARK = """
import runpy, sys
sys.modules["pyspark.sql.streaming.datasource"] = None
task, config = sys.argv[1:]
sys.argv = [task, "--config", config, "--once"]
runpy.run_path(task, run_name="__main__")
"""


def test_task_says_which_runtime_it_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ON_OLD_PYSPARK, str(TASK), str(CONFIG)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("databricks_task: error: segcompact's streaming source does not load")
    assert "Databricks Runtime 19 or later" in line


# Reads the job's tables by catalog name in a new session: what a later run, or a user's SQL,
# sees in the metastore.
_READ_BY_NAME = """
import base64, json, sys
from segcompact.config import load_config
from segcompact.spark.session import config_settings, get_spark

config = load_config(sys.argv[1])
spark = get_spark(conf=config_settings(config))
b64 = lambda b: None if b is None else base64.b64encode(bytes(b)).decode()
state = [
    {
        "topic": r.topic, "partition": r.partition, "key": b64(r.key), "offset": r.offset,
        "timestamp": round(r.timestamp.timestamp() * 1000), "timestampType": r.timestampType,
        "value": b64(r.value), "headers": [[h.key, b64(h.value)] for h in r.headers],
        "order_value": r.order_value, "tombstone": r.tombstone,
    }
    for r in spark.table(config.state.table).collect()
]
tables = {
    name: spark.sql(f"DESCRIBE DETAIL {name}").first().format for name in config.state.tables()
}
print(json.dumps({"state": state, "tables": tables}))
"""


def _local_config(work: Path) -> Path:
    """deploy/databricks/compactor.toml with its volumes under ``work`` and its tables in the
    local catalog's ``default`` database, kept by a Hive metastore under ``work``.

    ``main.segcompact.state`` becomes ``default.seg_state``: open-source Delta's table builder
    (``DeltaTable.createIfNotExists().tableName``) parses at most ``database.table``, while
    Databricks' takes Unity Catalog's three parts.
    """
    text = CONFIG.read_text()
    text = text.replace('"/Volumes/', f'"{work}/Volumes/')
    text = re.sub(r'"main\.segcompact\.(\w+)"', r'"default.seg_\1"', text)
    spark = {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(work / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={work / 'metastore_db'};create=true"
        ),
    }
    text += "\n[spark]\n" + "".join(
        f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in spark.items()
    )
    path = work / "compactor.toml"
    path.write_text(text)
    return path


def _run_task(work: Path, conf_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TASK), *args],
        cwd=work,
        env=cli_env(conf_dir),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def _b64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


@pytest.mark.spark
def test_task_runs_once_with_tables_by_catalog_name(tmp_path: Path) -> None:
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.driver.extraJavaOptions {JVM_OPTIONS} -Dderby.system.home={tmp_path}\n"
    )
    config_path = _local_config(tmp_path)
    config = load_config(config_path)
    (segments,) = config.source.paths
    log = write_log(Path(segments), 20261123)

    # Twice, as the continuous job restarts: the second run finds the tables in the catalog.
    for run in (1, 2):
        done = _run_task(tmp_path, conf_dir, "--config", str(config_path), "--once")
        assert done.returncode == 0, f"run {run}: {done.stderr[-4000:]}"
        assert "Traceback" not in done.stderr, f"run {run}: {done.stderr[-4000:]}"

    found = subprocess.run(
        [sys.executable, "-c", _READ_BY_NAME, str(config_path)],
        cwd=tmp_path,
        env=cli_env(conf_dir),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert found.returncode == 0, found.stderr[-4000:]
    result = json.loads(found.stdout.strip().splitlines()[-1])

    assert result["tables"] == dict.fromkeys(config.state.tables(), "delta")
    rows = {
        (r["topic"], r["partition"], _b64(r["key"])): {
            **r,
            "value": _b64(r["value"]),
            "headers": tuple((k, _b64(v)) for k, v in r["headers"]),
        }
        for r in result["state"]
    }
    # rolled_only = false: every segment is read, the active one too.
    model = model_of(config, log.records(log.segments), now_ms=0)
    assert model.state
    assert without_times(rows) == without_times(model_state(model))
    assert output_records(config) == model_output(model)
