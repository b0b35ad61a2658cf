"""The shipper runs beside a broker, without a JVM: nothing it imports brings Spark in."""

from __future__ import annotations

import subprocess
import sys

import pytest

SHIPPER_MODULES = (
    "segcompact.app.ship",
    "segcompact.ship.shipper",
    "segcompact.config.ship",
)


@pytest.mark.parametrize("module", SHIPPER_MODULES)
def test_the_shipper_does_not_import_spark(module: str) -> None:
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
