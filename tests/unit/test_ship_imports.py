"""The shipper runs beside a broker, without a JVM and light: nothing it imports brings in
Spark, or the columnar libraries (pyarrow, numpy, pandas: some 65 MiB of memory) it has no use
for."""

from __future__ import annotations

import subprocess
import sys

import pytest

SHIPPER_MODULES = (
    "segcompact.app.ship",
    "segcompact.ship.shipper",
    "segcompact.config.ship",
    "segcompact.storage.objectstore",
)
NOT_FOR_THE_SHIPPER = ("pyspark", "py4j", "delta", "deltalake", "pyarrow", "numpy", "pandas")


@pytest.mark.parametrize("module", SHIPPER_MODULES)
def test_the_shipper_imports_neither_spark_nor_arrow(module: str) -> None:
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {NOT_FOR_THE_SHIPPER!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
