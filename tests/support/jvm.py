"""Apache Kafka's JVM side for tests: its jars, Java, and running one of its tools.

The jars come from Maven Central (`make .jars/kafka/.done`); Java comes from `JAVA_HOME` or
`PATH`. `kafka_broker` starts a broker from the same jars.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
JARS_ENV = "SEGCOMPACT_KAFKA_JARS"


class KafkaError(RuntimeError):
    """Raised when Kafka's jars or Java are missing, or a Kafka broker or tool fails."""


def tail(text: str, lines: int = 60) -> str:
    """The last ``lines`` lines of a tool's or broker's output, for an error message."""
    return "\n".join(text.splitlines()[-lines:])


def kafka_jars_dir() -> Path:
    """The folder holding Kafka's jars: `$SEGCOMPACT_KAFKA_JARS` or `<repo>/.jars/kafka`."""
    env = os.environ.get(JARS_ENV)
    return Path(env) if env else REPO_ROOT / ".jars" / "kafka"


def _find_java() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def kafka_jars_available() -> bool:
    """True when Java and Kafka's broker jar are both there (a broker can be started)."""
    jars = kafka_jars_dir()
    return _find_java() is not None and any(jars.glob("kafka_2.13-*.jar"))


def missing_kafka_message() -> str:
    """Why a Kafka test cannot run, and what to do about it."""
    return (
        f"Apache Kafka's jars or Java are missing (jars dir {kafka_jars_dir()}, "
        f"java {_find_java() or 'not found'}): run `make .jars/kafka/.done` "
        f"(or set {JARS_ENV}) and install Java 17+"
    )


def java_executable() -> str:
    """The `java` to run Kafka with; raises KafkaError when there is none."""
    java = _find_java()
    if java is None:
        raise KafkaError("java not found: set JAVA_HOME or put java on PATH")
    return java


def kafka_version() -> str:
    """The Kafka version of the jars, read from the `kafka-clients-<version>.jar` name."""
    for jar in sorted(kafka_jars_dir().glob("kafka-clients-*.jar")):
        return jar.name.removeprefix("kafka-clients-").removesuffix(".jar")
    raise KafkaError(missing_kafka_message())


def classpath() -> str:
    jars = kafka_jars_dir()
    if not any(jars.glob("kafka_2.13-*.jar")):
        raise KafkaError(missing_kafka_message())
    return str(jars / "*")


# Kafka tools that moved out of the Scala core; the old names still work with run_java_tool.
# DumpLogSegments moved in Kafka 4.3 (KAFKA-14579) into the org.apache.kafka:kafka-tools jar,
# which kafka_2.13 does not depend on.
MOVED_TOOLS = {
    "kafka.tools.DumpLogSegments": "org.apache.kafka.tools.DumpLogSegments",
}
_TOOL_ARTIFACTS = {
    "org.apache.kafka.tools.DumpLogSegments": "org.apache.kafka:kafka-tools",
}


@lru_cache(maxsize=8)
def _classes_in(jars_dir: Path) -> frozenset[str]:
    names: set[str] = set()
    for jar in jars_dir.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            names.update(n for n in z.namelist() if n.endswith(".class"))
    return frozenset(names)


def java_class_available(name: str) -> bool:
    """True if a jar in `kafka_jars_dir()` holds the class (dotted name)."""
    return f"{name.replace('.', '/')}.class" in _classes_in(kafka_jars_dir())


def resolve_main_class(name: str) -> str:
    """The main class to run for `name`, following MOVED_TOOLS; raises if neither exists."""
    if java_class_available(name):
        return name
    moved = MOVED_TOOLS.get(name)
    if moved and java_class_available(moved):
        return moved
    wanted = moved or name
    artifact = _TOOL_ARTIFACTS.get(wanted)
    hint = f"; it is in {artifact}, add it to jvm/kafka/pom.xml" if artifact else ""
    raise KafkaError(f"{wanted} is not in the jars of {kafka_jars_dir()}{hint}")


def run_java_tool(
    main_class: str, *args: str | os.PathLike[str], check: bool = True, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run a Kafka main class (e.g. `kafka.tools.DumpLogSegments`) and capture its output.

    Tools Kafka has moved are found under their new name (MOVED_TOOLS). With `check`, a
    non-zero exit raises KafkaError carrying stdout and stderr.
    """
    jars = classpath()
    cmd = [java_executable(), "-cp", jars, resolve_main_class(main_class), *map(str, args)]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    if check and proc.returncode != 0:
        raise KafkaError(
            f"{main_class} exited with {proc.returncode}\n"
            f"--- stdout ---\n{tail(proc.stdout)}\n--- stderr ---\n{tail(proc.stderr)}"
        )
    return proc
