"""The pure layers stay pure: no Spark when imported, and no file I/O of their own in the codec
and the compaction logic (callers hand them input files and output directories)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import segcompact.app
import segcompact.compaction
import segcompact.config
import segcompact.format

PURE_PACKAGES = (segcompact.format, segcompact.compaction, segcompact.config)


def _modules(*packages: ModuleType) -> list[str]:
    prefixes = [(p.__path__, p.__name__ + ".") for p in packages]
    return sorted(m.name for path, prefix in prefixes for m in pkgutil.iter_modules(path, prefix))


# Pure modules of packages that also do I/O (erasure's scan reads files; its verdict does not).
PURE_MODULES = ("segcompact.erasure.verdict", "segcompact.erasure.unread", "segcompact.humanize")
# Modules that read (delta-rs, files) but must answer without a JVM.
NO_SPARK_MODULES = ("segcompact.dump", "segcompact.cli", "segcompact.due", "segcompact.unmerged")


# The commands (segcompact.app) start Spark only when they need it, not when imported.
NO_SPARK_IMPORTS = (*PURE_MODULES, *NO_SPARK_MODULES, *_modules(segcompact.app))


@pytest.mark.parametrize("module", [*_modules(*PURE_PACKAGES), *NO_SPARK_IMPORTS])
def test_module_does_not_import_pyspark(module: str) -> None:
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# What touches a file system: the names, and the os functions besides path arithmetic.
_FILE_CALLS = {"open", "Path", "PurePath"}
_FILE_MODULES = {"shutil", "pathlib", "io", "tempfile", "glob"}
_OS_FILE_FUNCTIONS = {
    "open", "fdopen", "read", "write", "pread", "pwrite", "fsync", "stat", "fstat", "lstat",
    "listdir", "scandir", "walk", "makedirs", "mkdir", "remove", "unlink", "rmdir", "rename",
    "replace", "link", "symlink", "readlink", "truncate", "exists", "isfile", "isdir",
    "getsize", "lexists", "chmod", "utime",
}  # fmt: skip


def _file_access(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            found += [f"import {n}" for n in names if n and n.split(".")[0] in _FILE_MODULES]
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _FILE_CALLS:
                found.append(f"{f.id}() at line {node.lineno}")
            elif isinstance(f, ast.Attribute) and f.attr in _OS_FILE_FUNCTIONS:
                root = f.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in ("os", "posixpath"):
                    found.append(f"{ast.unparse(f)}() at line {node.lineno}")
    return found


@pytest.mark.parametrize(
    "path",
    sorted(
        [
            *(
                p
                for package in (segcompact.format, segcompact.compaction)
                for p in Path(package.__path__[0]).glob("*.py")
            ),
            *(
                Path(segcompact.__path__[0], *m.split(".")[1:]).with_suffix(".py")
                for m in PURE_MODULES
            ),
        ]
    ),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_codec_and_compaction_do_no_file_io(path: Path) -> None:
    assert _file_access(ast.parse(path.read_text(encoding="utf-8"))) == []


def test_the_file_io_check_sees_file_io() -> None:
    code = "import shutil\nos.fsync(f)\nopen('x')\nos.path.getsize('y')\nos.path.basename('z')\n"
    assert _file_access(ast.parse(code)) == [
        "import shutil",
        "os.fsync() at line 2",
        "open() at line 3",
        "os.path.getsize() at line 4",
    ]
