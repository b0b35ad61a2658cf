"""Every module imports first, alone: a Python worker unpickling a function imports its module
before anything else, so an import cycle hidden by the usual import order fails a job there."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import segcompact

_FRESH_IMPORTS = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "segcompact" or m.startswith("segcompact.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as e:
        failed.append(f"{name}: {type(e).__name__}: {e}")
print("\\n".join(failed))
"""


def test_every_module_imports_on_its_own() -> None:
    names = [m.name for m in pkgutil.walk_packages(segcompact.__path__, "segcompact.") if m.name]
    assert "segcompact.erasure.schedule" in names
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_IMPORTS, *names], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""
