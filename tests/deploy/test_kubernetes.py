"""deploy/kubernetes/: the SparkApplication against the Spark operator's own CRD schema, the
config its ConfigMap holds, the S3 credentials of its pods, and the image's Python install.

No cluster and no Docker daemon here: what can be checked without them is checked against the
real artefacts (the operator's CRD from its Go module, segcompact's config loader, this
checkout's venv for the image's import check).
"""

from __future__ import annotations

import ast
import copy
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from segcompact.config import CompactorConfig, load_config
from segcompact.storage.settings import scheme_of
from tests.e2e.harness import run_cli
from tests.support import crds

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "kubernetes"
MANIFEST = DEPLOY / "sparkapplication.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
S3_SECRET = "segcompact-s3"
S3_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def documents() -> list[Doc]:
    with MANIFEST.open("rb") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


@pytest.fixture(scope="module")
def app(documents: list[Doc]) -> Doc:
    (found,) = [doc for doc in documents if doc.get("kind") == "SparkApplication"]
    return found


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    """The operator's v1beta2 schema as the CRD serves it: unknown fields left open."""
    return crds.spark_application_schema("v1beta2")


@pytest.fixture(scope="module")
def strict(schema: dict[str, Any]) -> jsonschema.Draft4Validator:
    """The same schema with unknown fields rejected, as ``kubectl apply`` (strict) does."""
    return crds.validator(crds.strict(schema))


def errors(validator: jsonschema.Draft4Validator, doc: Doc) -> list[tuple[str, str]]:
    return sorted(
        (".".join(map(str, e.absolute_path)), e.message) for e in validator.iter_errors(doc)
    )


# --- the SparkApplication and the operator's CRD ---------------------------------------------


def test_manifest_is_one_spark_application_and_nothing_else(documents: list[Doc]) -> None:
    assert [(d["apiVersion"], d["kind"]) for d in documents] == [
        ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    ]


def test_spark_application_matches_the_operator_crd(
    app: Doc, strict: jsonschema.Draft4Validator
) -> None:
    assert errors(strict, app) == []


def _set(path: str, value: object) -> Callable[[Doc], None]:
    *parents, last = path.split(".")

    def change(doc: Doc) -> None:
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value

    return change


def _drop(path: str) -> Callable[[Doc], None]:
    *parents, last = path.split(".")

    def change(doc: Doc) -> None:
        node = doc
        for key in parents:
            node = node[key]
        del node[last]

    return change


def _conf(key: str, value: object) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        doc["spec"]["sparkConf"][key] = value

    return change


# (a change, where the error is, what it says, whether the CRD's own schema rejects it or only
# strict field validation does)
BROKEN = {
    "cores as a string": (
        _set("spec.driver.cores", "1"),
        "spec.driver.cores",
        "is not of type 'integer'",
        True,
    ),
    "no executor cores": (
        _set("spec.executor.cores", 0),
        "spec.executor.cores",
        "less than the minimum of 1",
        True,
    ),
    "memory as a number": (
        _set("spec.driver.memory", 2048),
        "spec.driver.memory",
        "is not of type 'string'",
        True,
    ),
    "misspelt type": (_set("spec.type", "Pyhton"), "spec.type", "is not one of", True),
    "no main file": (
        _drop("spec.mainApplicationFile"),
        "spec",
        "'mainApplicationFile' is a required property",
        True,
    ),
    # YAML's unquoted true is a boolean; sparkConf values must be strings.
    "unquoted boolean setting": (
        _conf("spark.sql.execution.arrow.pyspark.enabled", True),
        "spec.sparkConf.spark.sql.execution.arrow.pyspark.enabled",
        "is not of type 'string'",
        True,
    ),
    "unknown field in spec": (
        _set("spec.sparkConfs", {}),
        "spec",
        "'sparkConfs' was unexpected",
        False,
    ),
    "misspelt field in driver": (
        _set("spec.driver.envv", []),
        "spec.driver",
        "'envv' was unexpected",
        False,
    ),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_copy_fails_validation(
    name: str, app: Doc, schema: dict[str, Any], strict: jsonschema.Draft4Validator
) -> None:
    change, where, message, crd_rejects = BROKEN[name]
    broken = copy.deepcopy(app)
    change(broken)
    found = errors(strict, broken)
    assert [w for w, m in found if message in m] == [where], found
    # Unknown fields pass the CRD's schema as served: the API server would prune them
    # silently unless the client asks for strict field validation.
    assert bool(errors(crds.validator(schema), broken)) is crd_rejects


# --- the config in the ConfigMap --------------------------------------------------------------


def _commands(path: Path, prefix: str) -> list[list[str]]:
    """The command lines in ``path``'s comments that start with ``prefix``."""
    found = []
    for line in path.read_text().splitlines():
        text = line.lstrip("# ").strip()
        if line.startswith("#") and text.startswith(prefix):
            found.append(shlex.split(text))
    return found


def _option(argv: list[str], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in argv if a.startswith(f"{name}=")]
    return value


def _mounted_config(app: Doc, mount_root: Path) -> Path:
    """The config file as the driver pod sees it, laid out under ``mount_root``: the ConfigMap
    the manifest's comments create, at the mount of the volume that names it, read at the path
    of the job's ``--config`` argument."""
    (argv,) = _commands(MANIFEST, "kubectl create configmap")
    name = argv[3]
    key, file = _option(argv, "--from-file").split("=", 1)
    (volume,) = [
        v["name"] for v in app["spec"]["volumes"] if v.get("configMap", {}).get("name") == name
    ]
    (mount,) = [
        m["mountPath"] for m in app["spec"]["driver"]["volumeMounts"] if m["name"] == volume
    ]
    target = mount_root / mount.lstrip("/") / key
    target.parent.mkdir(parents=True)
    target.write_bytes((REPO / file).read_bytes())
    args = app["spec"]["arguments"]
    config = args[args.index("--config") + 1]
    assert config == f"{mount}/{key}"
    return mount_root / config.lstrip("/")


@pytest.fixture(scope="module")
def config(app: Doc, tmp_path_factory: pytest.TempPathFactory) -> CompactorConfig:
    return load_config(_mounted_config(app, tmp_path_factory.mktemp("pod")))


def _locations(config: CompactorConfig) -> Iterator[str]:
    yield from config.source.paths
    yield from config.owned()


def test_config_in_the_configmap_loads_and_every_location_is_an_object_store(
    config: CompactorConfig,
) -> None:
    locations = list(_locations(config))
    assert len(locations) == 8  # one source root, five tables, the output, the checkpoint
    # s3a:// everywhere (None would be a local path): the pods share no volume, and S3 is the
    # store their credentials are for.
    assert {loc: scheme_of(loc) for loc in locations} == dict.fromkeys(locations, "s3a")


def test_config_names_the_region_and_holds_no_credentials(config: CompactorConfig) -> None:
    assert config.spark.get("spark.hadoop.fs.s3a.endpoint.region")
    # A ConfigMap is not secret: keys come from the pods' environment.
    assert not [key for key in config.spark if re.search(r"(access|secret)\.key|token", key)]


def test_config_passes_the_start_check_with_the_secrets_variables(
    config: CompactorConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``segcompact run`` checks at start that every location's store can be opened: with the
    two variables the pods get from the Secret, it can."""
    for name in S3_VARIABLES:
        monkeypatch.setenv(name, f"test-{name.lower()}")
    config.check_storage()


# --- the pods' environment ---------------------------------------------------------------------


@pytest.mark.parametrize("role", ["driver", "executor"])
def test_pods_take_s3_credentials_from_the_secret(app: Doc, role: str) -> None:
    env = {e["name"]: e for e in app["spec"][role].get("env", [])}
    for name in S3_VARIABLES:
        assert "value" not in env[name]
        assert env[name]["valueFrom"] == {"secretKeyRef": {"name": S3_SECRET, "key": name}}
    # The Secret as the manifest's comments create it, with a key for each variable.
    (argv,) = _commands(MANIFEST, f"kubectl create secret generic {S3_SECRET} ")
    keys = [a.split("=")[1] for a in argv if a.startswith("--from-literal=")]
    assert sorted(keys) == sorted(S3_VARIABLES)


def test_no_volume_is_shared(app: Doc) -> None:
    def keys(node: object) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                yield key
                yield from keys(value)
        elif isinstance(node, list):
            for item in node:
                yield from keys(item)

    assert "persistentVolumeClaim" not in set(keys(app))
    assert [v["name"] for v in app["spec"]["volumes"]] == ["config"]
    assert "volumeMounts" not in app["spec"]["executor"]


# --- the image -----------------------------------------------------------------------------------


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(instruction, arguments) as Docker's parser reads them: continuation lines joined, comment
    lines left out (also inside a continued instruction)."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if line.lstrip().startswith("#") or (not pending and not line.strip()):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        text = pending + line
        pending = ""
        instruction, _, arguments = text.strip().partition(" ")
        result.append((instruction.upper(), arguments.strip()))
    return result


def _install_runs() -> list[str]:
    """The RUN instructions that pip-install into the image's venv (not the one installing uv)."""
    return [
        a
        for i, a in _instructions(DOCKERFILE)
        if i == "RUN" and "pip install" in a and "/opt/segcompact/venv/" in a
    ]


def _check_code() -> str:
    (run,) = _install_runs()
    (code,) = re.findall(r'venv/bin/python -c "([^"]*)"', run)
    return code


def test_image_installs_the_wheel_with_the_spark_and_s3_extras() -> None:
    (run,) = _install_runs()
    (extras,) = re.findall(r"""pip install [^&;|]*?['"]?\.\[([^\]]*)\]""", run)
    assert {"spark", "s3"} <= {e.strip() for e in extras.split(",")}


def test_image_checks_the_job_module_and_the_accelerator() -> None:
    imported = {
        alias.name
        for node in ast.walk(ast.parse(_check_code()))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert {"segcompact.spark.job", "segcompact.format._crecords"} <= imported


def test_image_check_passes_in_this_checkout() -> None:
    """The image's import check, run by this venv's Python (which has the same extras): the
    modules it names exist in this checkout and import without a cluster."""
    result = subprocess.run(
        [sys.executable, "-c", _check_code()], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_image_has_the_s3a_jars_in_sparks_classpath() -> None:
    copies = [a.split() for i, a in _instructions(DOCKERFILE) if i == "COPY"]
    assert [".jars/s3/*.jar", "/opt/spark/jars/"] in copies
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert "!.jars/s3/*.jar" in ignore  # else the build context has none of them


def test_manifest_runs_what_the_image_holds(app: Doc) -> None:
    text = DOCKERFILE.read_text()
    main = app["spec"]["mainApplicationFile"].removeprefix("local://")
    assert f"COPY streaming/segcompact_job.py {main}" in text
    python = app["spec"]["sparkConf"]["spark.pyspark.python"]
    assert f"PYSPARK_PYTHON={python}" in text


def test_the_drivers_liveness_probe_is_segcompact_health_on_its_config(app: Doc) -> None:
    """The probe runs the image's segcompact on the config the job runs with, and fails only
    when the job is not running (restarting mends nothing else)."""
    driver = app["spec"]["driver"]
    (container,) = driver["template"]["spec"]["containers"]
    assert container["name"] == "spark-kubernetes-driver"  # Spark's driver container
    command = container["livenessProbe"]["exec"]["command"]
    python = app["spec"]["sparkConf"]["spark.pyspark.python"]
    assert command[0] == str(Path(python).parent / "segcompact")
    config = app["spec"]["arguments"][app["spec"]["arguments"].index("--config") + 1]
    assert command[1:] == ["health", "--config", config, "--fail-on", "running"]
    mounted = {m["mountPath"] for m in driver["volumeMounts"]}
    assert str(Path(config).parent) in mounted
    # The command line accepts it (it fails here only for want of the mounted config).
    result = run_cli(*command[1:], cwd=Path.cwd())
    assert result.returncode == 2 and "compactor.toml" in result.stderr


def test_the_driver_declares_the_configs_metrics_port(app: Doc, config: CompactorConfig) -> None:
    driver = app["spec"]["driver"]
    assert config.metrics.port is not None and config.metrics.host == "0.0.0.0"
    assert {"name": "metrics", "containerPort": config.metrics.port, "protocol": "TCP"} in driver[
        "ports"
    ]
    assert driver["annotations"]["prometheus.io/port"] == str(config.metrics.port)
