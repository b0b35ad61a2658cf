"""The pure layers stay free of Spark: importing them must not import pyspark."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["segcompact.format", "segcompact.format.arrow", "segcompact.dump", "segcompact.cli"]
)
def test_module_does_not_import_pyspark(module: str) -> None:
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        "import segcompact.format.segment, segcompact.format.writer; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
