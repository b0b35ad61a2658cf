"""The classes a short-lived JVM loads, archived by its first run and mapped by the next ones.

A ``run --once`` or a command starts a new JVM, which loads and verifies some 18,000 classes of
Spark, Delta and Scala from their jars: about 5 CPU s of a run on an empty source and 7 of a
run on 268 MB. The JVM's class data sharing (CDS) keeps them parsed and verified in a file
that later JVMs map instead: the first JVM of a class path writes it as it exits
(``-XX:ArchiveClassesAtExit``), the next ones map it (``-XX:SharedArchiveFile``). The JVM
checks that an archive matches its class path and jars and ignores one that does not, so a
stale archive costs speed, never correctness; its file name also names the Java, the jars and
the configuration directory it was written for.

An archive lives in the user's cache directory (``segcompact/jvm-classes-*.jsa``, about 200
MB), kept while it is used: one not used for 30 days is removed when another is written.
Writing one costs the first run 15 to 23 CPU s more (each later run saves 4 to 7); its
Python process waits for the JVM to write it, under a temporary name. The JVM cannot archive
a class path holding a directory with files in it (a ``spark-defaults.conf`` in
``SPARK_CONF_DIR``; ``HADOOP_CONF_DIR`` and the like, whatever they hold), and Spark splits
the options at spaces: no archive then, nor where other settings of the launcher change the
class path or the JVM's options unseen here. A damaged archive crashes the JVM that maps it:
:func:`~segcompact.spark.session.get_spark` then removes it and starts the JVM without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from segcompact.spark.spark_home import cache_dir

# Part of each archive's name: a new way of writing them gets new files.
_LAYOUT = "1"
_UNUSED_S = 30 * 24 * 3600  # an archive not used for this long is removed
_RETRY_S = 24 * 3600  # a failed attempt to write one is not repeated sooner
# Java options of the user's that decide the JVM's class data sharing themselves.
_CDS_OPTIONS = (
    "-Xshare:off",
    "-XX:-UseSharedSpaces",
    "SharedArchiveFile",
    "ArchiveClassesAtExit",
    "AutoCreateSharedArchive",
)
_OPTION_SETTINGS = ("spark.driver.defaultJavaOptions", "spark.driver.extraJavaOptions")
# Where the `java` launcher reads options besides its command line.
JAVA_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")
_SHARE = re.compile(r"-Xshare:\w+")
_SPLIT = re.compile(r"[\s'\"\\]")  # what Spark's option parsing would take apart
# What the launcher adds to the class path besides the configuration directory and the jars,
# or to the JVM's options.
_LAUNCHER_VARIABLES = (
    "HADOOP_CONF_DIR",
    "YARN_CONF_DIR",
    "SPARK_DIST_CLASSPATH",
    "SPARK_CLASSPATH",
    "SPARK_PREPEND_CLASSES",
    "SPARK_TESTING",
    "SPARK_SUBMIT_OPTS",
    "PYSPARK_SUBMIT_ARGS",
)
# The JVM's own lines about archives (a class it would not archive): none.
_QUIET = "-Xlog:cds*=off"


@dataclass(frozen=True)
class ClassArchive:
    """What a JVM does with its classes' archive: maps it (``part`` None) or writes it to
    ``part``, which :meth:`finish` names ``path`` once the JVM has exited."""

    path: Path
    part: Path | None = None

    @property
    def java_options(self) -> str:
        if self.part is None:
            # A damaged archive crashes the JVM: its report goes to the temporary directory,
            # not the working one.
            return f"-XX:SharedArchiveFile={self.path} -XX:ErrorFile={self.crash_report} {_QUIET}"
        return f"-XX:ArchiveClassesAtExit={self.part} {_QUIET}"

    @property
    def crash_report(self) -> Path:
        """Where the JVM this process starts writes its report if it crashes."""
        return Path(tempfile.gettempdir(), f"segcompact-jvm-crash-{os.getpid()}.log")

    def finish(self) -> None:
        """At this process's exit: let the JVM exit and write the archive, then name it."""
        if self.part is not None:
            _finish(self.part, self.path)


def class_archive(home: str, settings: Mapping[str, str]) -> ClassArchive | None:
    """The archive of classes for a JVM started from the Spark home ``home`` with these
    settings, to map or to write; None where it can have none (or wrote none lately)."""
    named = _inputs(Path(home), settings)
    if named is None:
        return None
    digest = hashlib.sha256("\0".join(named).encode()).hexdigest()[:16]
    archive = cache_dir() / f"jvm-classes-{digest}.jsa"
    try:
        if archive.is_file():
            os.utime(archive)  # used: kept
            return ClassArchive(archive)
        tried = archive.with_suffix(".tried")
        if tried.exists() and time.time() - tried.stat().st_mtime < _RETRY_S:
            return None  # the JVM did not write it lately: no second attempt yet
        archive.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tried.touch()
        _remove_unused(archive.parent)
    except OSError:
        return None
    # Named apart from any other process's, in another PID namespace too.
    part = f".{archive.name}.{os.getpid()}-{secrets.token_hex(4)}"
    return ClassArchive(archive, archive.with_name(part))


def _inputs(home: Path, settings: Mapping[str, str]) -> list[str] | None:
    """What the archive depends on (the JVM, its class path, Spark's jars), or None where the
    JVM could not archive or map it."""
    given = [settings.get(k, "") for k in _OPTION_SETTINGS]
    given += [os.environ.get(v, "") for v in JAVA_OPTION_VARIABLES]
    options = " ".join(given)
    if any(o in options for o in _CDS_OPTIONS) or settings.get("spark.driver.extraClassPath"):
        return None
    # Options that may change what an archive holds or whether it maps (the heap's size
    # decides compressed pointers): another archive; -Xshare:on or auto changes neither.
    options = " ".join(_SHARE.sub("", options).split())
    memory = settings.get("spark.driver.memory", "")
    if any(os.environ.get(v) for v in _LAUNCHER_VARIABLES):
        return None
    conf = Path(os.environ.get("SPARK_CONF_DIR") or home / "conf")
    java = _java()
    if java is None or _SPLIT.search(f"{cache_dir()}{tempfile.gettempdir()}"):
        return None  # Spark would split the archive's or the crash report's path
    try:
        if conf.is_dir() and any(conf.iterdir()):
            return None  # a directory with files on the class path: the JVM cannot archive it
        jars = sorted((home / "jars").iterdir())
        jars += [Path(j) for j in settings.get("spark.jars", "").split(",") if j]
        libjvm = java.parent.parent / "lib" / "server" / "libjvm.so"
        runtime = [_stat(java), *([_stat(libjvm)] if libjvm.exists() else [])]
        return [_LAYOUT, *runtime, str(home), str(conf), options, memory, *map(_stat, jars)]
    except OSError:
        return None


def _java() -> Path | None:
    """The ``java`` Spark's launcher runs (``JAVA_HOME``'s, else the one on ``PATH``)."""
    java_home = os.environ.get("JAVA_HOME")
    found = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    return Path(found).resolve() if found else None


def _stat(path: Path) -> str:
    """A file, by what changes when it does."""
    info = path.stat()
    return f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}"


def _remove_unused(cache: Path) -> None:
    """Archives not used for a while, and the temporary files of writes long gone."""
    now = time.time()
    old: Iterable[Path] = [*cache.glob("jvm-classes-*"), *cache.glob(".jvm-classes-*")]
    for path in old:
        try:
            unused = now - path.stat().st_mtime
            if unused > (_UNUSED_S if path.suffix == ".jsa" else _RETRY_S):
                path.unlink()
        except OSError:
            pass


def _finish(part: Path, archive: Path) -> None:
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if not isinstance(proc, subprocess.Popen):
        return
    # Python's accumulator server reads its workers' updates from the JVM: stopped first (as
    # SparkContext.stop does), or the JVM's exit ends that connection mid-read and it prints
    # a traceback.
    context = SparkContext._active_spark_context
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        with contextlib.suppress(Exception):  # the archive matters more than a clean stop
            server.shutdown()
            context._accumulatorServer = None  # type: ignore[union-attr]
    try:
        if proc.stdin is not None:
            proc.stdin.close()  # the JVM exits when its stdin closes
        proc.wait(timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return
    try:
        if proc.returncode == 0 and part.is_file():
            part.replace(archive)
            archive.with_suffix(".tried").unlink(missing_ok=True)
        else:
            part.unlink(missing_ok=True)
    except OSError:
        pass
