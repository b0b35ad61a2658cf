"""The Kubernetes Operator for Apache Spark's CRD schemas, for checking manifests in tests.

The operator's Go module ships the CRDs it installs, as controller-gen wrote them
(``config/crd/bases/``). ``go mod download`` fetches one version of the module through the Go
module proxy, checked against the Go checksum database, into the module cache; the CRD file is
copied from there into ``.tools/crds/`` (ignored by git), so later runs need neither ``go`` nor
the network. ``make crds`` runs this module to fetch it ahead of the tests:

    python -m tests.support.crds        # prints the cached CRD file

A CRD's schema leaves unknown fields open: the API server prunes them silently, and rejects
them only when the client asks for strict field validation (``kubectl apply --validate=strict``,
kubectl's default). :func:`strict` makes a schema reject them as that does.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SPARK_OPERATOR_MODULE = "github.com/kubeflow/spark-operator/v2"
# The newest version the module proxy serves (tagged 2026-07-31); the module's own versions
# list is not served, so a newer one has to be asked for by name.
SPARK_OPERATOR_VERSION = "v2.5.2"
SPARK_APPLICATIONS_CRD = "config/crd/bases/sparkoperator.k8s.io_sparkapplications.yaml"
CACHE_DIR = Path(__file__).resolve().parents[2] / ".tools" / "crds"
_DOWNLOAD_TIMEOUT_S = 600  # a bound on a hung download, not a pass condition


def crd_file(
    path: str = SPARK_APPLICATIONS_CRD,
    *,
    module: str = SPARK_OPERATOR_MODULE,
    version: str = SPARK_OPERATOR_VERSION,
) -> Path:
    """The cached copy of the file ``path`` of ``module@version``, downloaded when missing."""
    cached = CACHE_DIR / f"{module.replace('/', '+')}@{version}" / Path(path).name
    if cached.is_file():
        return cached
    source = download_module(module, version) / path
    if not source.is_file():
        raise FileNotFoundError(f"{module}@{version} has no {path}")
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
    shutil.copyfile(source, partial)  # a plain copy: the module cache's files are read-only
    os.replace(partial, cached)
    return cached


def download_module(module: str, version: str) -> Path:
    """``go mod download`` of ``module@version``: its folder in the module cache."""
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError(f"go not found: it downloads {module}@{version}; run `make crds`")
    # Outside any Go module (a fresh temporary folder), so no go.mod or go.sum is read or touched.
    with tempfile.TemporaryDirectory() as workdir:
        result = subprocess.run(
            [go, "mod", "download", "-json", f"{module}@{version}"],
            cwd=workdir,
            env={**os.environ, "GOFLAGS": "-mod=mod"},
            capture_output=True,
            text=True,
            timeout=_DOWNLOAD_TIMEOUT_S,
            check=False,
        )
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        info = {}
    if result.returncode != 0 or info.get("Error") or not info.get("Dir"):
        problem = info.get("Error") or result.stderr.strip() or f"exit code {result.returncode}"
        raise RuntimeError(f"go mod download {module}@{version} failed: {problem}")
    return Path(info["Dir"])


def openapi_schema(crd: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The OpenAPI v3 schema a CRD serves for the API version named ``version``."""
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            return dict(served["schema"]["openAPIV3Schema"])
    names = [served["name"] for served in crd["spec"]["versions"]]
    raise KeyError(f"{crd['metadata']['name']} has no version {version!r}; it has {names}")


def spark_application_schema(version: str = "v1beta2") -> dict[str, Any]:
    """The schema of a ``SparkApplication`` (``sparkoperator.k8s.io/<version>``)."""
    with crd_file().open("rb") as f:
        # libyaml's loader where PyYAML has it: the CRD is 0.8 MB, 0.2 s against 3 s.
        crd = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return openapi_schema(crd, version)


def strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` that rejects unknown fields, as strict field validation does.

    Every object schema that lists its properties gets ``additionalProperties: false``, unless
    it keeps unknown fields on purpose (``x-kubernetes-preserve-unknown-fields``) or already
    says what other properties may be (a map). ``nullable`` (OpenAPI 3.0) becomes a JSON
    Schema type that allows null.
    """
    result = copy.deepcopy(dict(schema))
    _close(result)
    return result


def _close(node: dict[str, Any]) -> None:
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        node["additionalProperties"] = False
    if node.get("nullable") and isinstance(node.get("type"), str):
        node["type"] = [node["type"], "null"]
    # The schemas inside this one (never a property map or an enum as if it were a schema).
    for child in node.get("properties", {}).values():
        _close(child)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            _close(node[key])
    for key in ("allOf", "anyOf", "oneOf"):
        for child in node.get(key, ()):
            _close(child)


def validator(schema: Mapping[str, Any]) -> jsonschema.Draft4Validator:
    """A validator of ``schema``: JSON Schema draft 4, the draft whose keywords OpenAPI 3.0's
    schema objects (and so Kubernetes' structural schemas) keep."""
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


if __name__ == "__main__":
    print(crd_file())
