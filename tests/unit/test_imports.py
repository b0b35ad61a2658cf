"""How modules import each other.

Every module imports first, alone: a Python worker unpickling a function imports its module
before anything else, so an import cycle hidden by the usual import order fails a job there.

And imports point down the floors below, never up, and never round in a cycle: every ``import``
counts, at the top of a module, inside a function or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import segcompact

SRC = Path(segcompact.__path__[0]).parent
REPO = SRC.parent

# The floors, lowest first. A module imports from its own floor and the floors below it, never
# from one above. A name covers a package and everything in it, and the longest name covering a
# module gives its floor (``segcompact.erasure`` is on rules, its ``scan`` on stores). A module
# no name covers fails the test below until it is given a floor.
FLOORS: tuple[tuple[str, frozenset[str]], ...] = (
    # Foundations every floor uses: the root error, the clock, how times and sizes read.
    (
        "foundations",
        frozenset(
            {"segcompact.errors", "segcompact.clock", "segcompact.humanize", "segcompact.timing"}
        ),
    ),
    # Kafka's on-disk format, pure.
    ("format", frozenset({"segcompact.format"})),
    # The one seam to file systems.
    ("storage", frozenset({"segcompact.storage"})),
    # The configuration, checked before a JVM starts.
    ("config", frozenset({"segcompact.config"})),
    # Pure rules: compaction, the deletion SLA's schedule, report and verdicts, a run's summary.
    (
        "rules",
        frozenset(
            {
                "segcompact.compaction",
                "segcompact.erasure",  # its scan and ledger reads are on the floors above
                "segcompact.run_summary",
            }
        ),
    ),
    # Files and tables without Spark of their own: the source's segments and manifest, the
    # output's publication and export, the lease, the table reader (delta-rs, and SQL over the
    # tables), generated logs, a segment's dump, the erasure scan.
    (
        "stores",
        frozenset(
            {
                "segcompact.backlog",
                "segcompact.delta",
                "segcompact.discovery",
                "segcompact.dump",
                "segcompact.erasure.scan",
                "segcompact.export",
                "segcompact.lease",
                "segcompact.manifest",
                "segcompact.publication",
                "segcompact.samples",
                "segcompact.ship",  # the shipper beside a broker: no Spark, no JVM
            }
        ),
    ),
    # What the tables say, by delta-rs (Spark's SQL only through a session handed in): status,
    # the ledger, source data not merged, what is due, health, the job's metrics.
    (
        "reads",
        frozenset(
            {
                "segcompact.due",
                "segcompact.erasure.ledger_reads",
                "segcompact.health",
                "segcompact.metrics",
                "segcompact.status",
                "segcompact.unmerged",
            }
        ),
    ),
    # Spark and Delta Lake: the source, the merge, the writes, the job.
    ("spark", frozenset({"segcompact.spark"})),
    # The commands, each run from start to end: what an entry point calls.
    ("application", frozenset({"segcompact.app"})),
    # Entry points: they parse, call and print.
    (
        "entry points",
        frozenset({"segcompact.cli", "streaming", "pyspark_segcompact"}),
    ),
)


def _modules() -> dict[str, Path]:
    """Every module of src/ and streaming/ by name (C extensions too, to resolve imports)."""
    found = {}
    for path in [*SRC.rglob("*.py"), *SRC.rglob("*.so"), *REPO.joinpath("streaming").glob("*.py")]:
        parts = path.relative_to(SRC if path.is_relative_to(SRC) else REPO).parts
        parts = (*parts[:-1], path.name.split(".")[0])
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(tree: ast.AST, known: Iterable[str]) -> list[tuple[str, int]]:
    """The known modules ``tree`` imports, with the line of each import: every Import and
    ImportFrom node wherever it is, a name imported from a package as its module if it is one."""
    known = set(known)

    def module_of(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, f"a relative import at line {node.lineno}"
            names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found += [(m, node.lineno) for m in map(module_of, names) if m is not None]
    return found


def _floor(module: str) -> int | None:
    if module == "segcompact":
        return 0  # the root package: its version only
    named = [
        (len(name), level)
        for level, (_, names) in enumerate(FLOORS)
        for name in names
        if module == name or module.startswith(name + ".")
    ]
    return max(named)[1] if named else None


def _graph() -> dict[str, list[tuple[str, int]]]:
    modules = _modules()
    return {
        name: [
            (m, line) for m, line in _imported(ast.parse(path.read_text()), modules) if m != name
        ]
        for name, path in sorted(modules.items())
        if path.suffix == ".py"
    }


def _upward(graph: Mapping[str, list[tuple[str, int]]]) -> list[str]:
    found = []
    for module, imports in graph.items():
        for imported, line in imports:
            low, high = _floor(module), _floor(imported)
            if low is not None and high is not None and high > low:
                found.append(
                    f"{module} ({FLOORS[low][0]}) imports {imported} ({FLOORS[high][0]}) "
                    f"at line {line}"
                )
    return found


def _cycles(graph: Mapping[str, list[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    edges = {m: sorted({i for i, _ in imports if i in graph}) for m, imports in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in edges[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in edges:
        if module not in index:
            visit(module)
    return cycles


def test_every_module_is_on_a_floor() -> None:
    modules = _graph()
    assert {"segcompact.spark.job", "streaming.segcompact_job"} <= modules.keys()
    assert [m for m in modules if _floor(m) is None] == []


def test_every_name_on_a_floor_is_a_module() -> None:
    modules = _modules()
    named = [n for _, names in FLOORS for n in names]
    assert len(named) == len(set(named))
    assert [n for n in named if not any(m == n or m.startswith(n + ".") for m in modules)] == []


def test_no_import_runs_up_a_floor() -> None:
    assert _upward(_graph()) == []


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


# Spark's packages: PySpark, its JVM bridge, and delta-spark's ``delta`` (not segcompact's).
SPARK_PACKAGES = frozenset({"pyspark", "py4j", "delta"})


def _spark_imports(tree: ast.AST) -> list[str]:
    """The imports of :data:`SPARK_PACKAGES` in ``tree`` that run, with their lines: anywhere
    (a function's too) but in the body of an ``if TYPE_CHECKING:``."""
    type_only: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith(
            "TYPE_CHECKING"
        ):
            type_only |= {id(n) for statement in node.body for n in ast.walk(statement)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and id(node) not in type_only:
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and id(node) not in type_only:
            names = [node.module or ""]
        else:
            continue
        found += [f"{n} at line {node.lineno}" for n in names if n.split(".")[0] in SPARK_PACKAGES]
    return found


def test_no_module_outside_spark_imports_pyspark_at_run_time() -> None:
    """Only ``segcompact.spark`` imports PySpark, py4j or delta-spark when it runs (for types,
    under ``TYPE_CHECKING``, anyone may): the rest reads tables through ``segcompact.delta`` and
    is handed Spark's readers. The entry points of streaming/ start a session by design."""
    found = {
        name: lines
        for name, path in _modules().items()
        if path.suffix == ".py"
        and not (name == "segcompact.spark" or name.startswith(("segcompact.spark.", "streaming")))
        and (lines := _spark_imports(ast.parse(path.read_text())))
    }
    assert found == {}


def test_the_spark_import_check_sees_run_time_imports_only() -> None:
    code = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "import pyarrow, py4j.java_gateway\n"
        "from segcompact.delta import native\n"
        "if TYPE_CHECKING:\n"
        "    from pyspark.sql import SparkSession\n"
        "else:\n"
        "    from delta.tables import DeltaTable\n"
        "if typing.TYPE_CHECKING:\n"
        "    import pyspark\n"
        "def f():\n"
        "    from pyspark.sql import functions\n"
    )
    assert _spark_imports(ast.parse(code)) == [
        "py4j.java_gateway at line 3",
        "delta.tables at line 8",
        "pyspark.sql at line 12",
    ]


def test_the_product_imports_nothing_from_tests() -> None:
    """The reference model and the other tests' helpers live in tests/: ``make demo`` and an
    installed package run without them."""
    found = {
        name: _imported(ast.parse(path.read_text()), ["tests"])
        for name, path in _modules().items()
        if path.suffix == ".py"
    }
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_checks_see_imports_anywhere_and_cycles() -> None:
    code = (
        "from typing import TYPE_CHECKING\n"
        "import segcompact.format.varint as v\n"
        "from segcompact.spark import tables, nothing\n"
        "if TYPE_CHECKING:\n"
        "    from segcompact.cli import main\n"
        "def f():\n"
        "    import segcompact.demo.nothing\n"
    )
    known = ["segcompact.format.varint", "segcompact.spark", "segcompact.spark.tables"]
    known += ["segcompact.cli", "segcompact.demo"]
    assert _imported(ast.parse("import tests.support.model\n"), ["tests"]) == [("tests", 1)]
    found = _imported(ast.parse(code), known)
    assert found == [
        ("segcompact.format.varint", 2),
        ("segcompact.spark.tables", 3),
        ("segcompact.spark", 3),
        ("segcompact.cli", 5),
        ("segcompact.demo", 7),
    ]
    graph = {"segcompact.format.varint": [("segcompact.spark.tables", 9)]}
    assert _upward(graph) == [
        "segcompact.format.varint (format) imports segcompact.spark.tables (spark) at line 9"
    ]
    graph = {"a": [("b", 1)], "b": [("c", 1)], "c": [("a", 1)], "d": [("a", 1)]}
    assert _cycles(graph) == [["a", "b", "c"]]


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
