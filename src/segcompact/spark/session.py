"""The SparkSession factory: a local session with Delta Lake's jars, or the one already running.

Three ways in, one function:
- a session already exists (Databricks, a notebook, a test fixture): it is returned as is;
  Databricks has Delta built in and owns its own settings;
- the driver was started by ``spark-submit``: master and jars come from its command line
  (``--packages io.delta:...``), only segcompact's SQL settings are added;
- otherwise segcompact starts the JVM itself with the Delta jars that ``make setup`` resolved
  from Maven Central into ``<repo>/.jars/delta`` (or ``$SEGCOMPACT_JARS_DIR``), and S3A's
  (``hadoop-aws`` and the AWS SDK) from ``<repo>/.jars/s3`` when they are there.

A JVM segcompact starts ignores SIGTERM (:mod:`segcompact.spark.jvm`): its driver ends it.

A config's ``[spark]`` settings (:func:`config_settings`) go to a session segcompact starts; a
session already running takes its ``spark.hadoop.*`` ones into its Hadoop configuration (the
object-store settings the job's locations need), and keeps the rest as it was started.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from segcompact.config.locations import is_table_name
from segcompact.errors import SegcompactError
from segcompact.spark.class_archive import JAVA_OPTION_VARIABLES, class_archive
from segcompact.spark.jvm import ignoring_sigterm
from segcompact.spark.spark_home import spark_home, unzipped_home
from segcompact.storage import Storage
from segcompact.timing import timed

if TYPE_CHECKING:
    from segcompact.config import CompactorConfig

log = logging.getLogger(__name__)

JARS_DIR_ENV = "SEGCOMPACT_JARS_DIR"
_JARS_SUBDIR = Path(".jars", "delta")
_S3_JARS_SUBDIR = Path(".jars", "s3")

# Only Delta's own connector and storage layer. delta-spark's pom also pulls in delta-kernel,
# Unity Catalog clients, Hadoop, Parquet and Jackson jars older than the ones in the pyspark
# wheel; on the classpath they would shadow or mix with Spark's own classes.
_DELTA_JAR_PATTERNS = ("delta-spark_*.jar", "delta-storage-*.jar")

# Settings segcompact relies on wherever it starts the session.
_BASE_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Kafka timestamps are epoch milliseconds; render and truncate them the same everywhere.
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}

# A small local machine (tests run on two cores): few shuffle partitions, no UI, loopback only.
_LOCAL_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    # Delta replays its log with 50 partitions by default, which dominates small local jobs.
    "spark.databricks.delta.snapshotPartitions": "2",
    # VACUUM lists files with this many tasks (10000 by default): minutes on a tiny table.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    # Workers forked with segcompact's task code imported (each worker imported it again):
    # about 2 CPU s less in a `run --once` of 268 MB.
    "spark.python.daemon.module": "segcompact.spark.daemon",
    # The state tables are partitioned by (topic, partition): without open writers to spare,
    # every write first sorts its rows by partition (0.8 CPU s of `run --once` on 268 MB for
    # 400,000 winners). A task with more partitions than this sorts the rest, as before. Not on
    # a cluster: each open writer buffers a row group outside Spark's memory accounting.
    "spark.sql.maxConcurrentOutputFileWriters": "8",
}


def get_spark(
    app_name: str = "segcompact",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    *,
    jvm_output: str | None = None,
    long_running: bool = False,
    archive_classes: bool = False,
) -> SparkSession:
    """Return the active SparkSession, or start one with Delta Lake configured.

    ``master`` defaults to ``local[*]`` unless ``spark-submit`` already chose one; ``conf``'s
    ``spark.master`` wins over it, and only a local one gets the local settings. ``conf``
    entries are applied last and win over segcompact's defaults; they are ignored when a
    session is already active. ``jvm_output``: a file that takes what a JVM started here
    writes (Spark's log lines, the JVM's own warnings) instead of this process's stderr.
    A local session that is not ``long_running`` starts its JVM from the Spark home of
    :func:`~segcompact.spark.spark_home.unzipped_home` where it can; a long-running one (the
    continuous job) from Spark's own, whose files no cache cleaner removes under it; with
    ``archive_classes`` (``run --once``, the commands), it maps the archive of its classes
    that the first such JVM wrote (:mod:`~segcompact.spark.class_archive`).
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        _apply_hadoop_settings(active, conf or {})
        return active

    settings = dict(_BASE_CONF)
    home = None  # Spark's own
    builder = SparkSession.builder.appName(app_name)
    if master is None and _launched_by_spark_submit():
        pass  # master, jars and resources come from spark-submit's command line
    else:
        # A ``conf`` entry wins, spark.master too (a config's [spark] naming a cluster): the
        # local settings below are for a local master alone.
        master = (conf or {}).get("spark.master") or master or "local[*]"
        builder = builder.master(master)
        settings["spark.jars"] = ",".join(str(jar) for jar in [*find_delta_jars(), *_s3_jars()])
        if master.startswith("local"):
            # Python workers must run this interpreter (the venv), not whatever `python3` is.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            # Spark picks a non-loopback interface for its services unless told otherwise.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            settings.update(_LOCAL_CONF)
    settings.update(conf or {})
    if (
        executors_in_driver(settings.get("spark.master", master))
        and not long_running
        and not _jvm_running()
    ):
        home = unzipped_home(settings)
    archive = class_archive(home, settings) if home and archive_classes else None
    default = settings.get("spark.driver.defaultJavaOptions", "")
    if archive is not None:
        settings["spark.driver.defaultJavaOptions"] = f"{default} {archive.java_options}"
        if archive.part is not None:
            atexit.register(archive.finish)
        else:
            with contextlib.suppress(OSError):  # an earlier process's of the same id
                archive.crash_report.unlink()
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        return _start(builder, home, jvm_output)
    except Exception as e:
        if (
            archive is None
            or archive.part is not None
            or not archive.crash_report.exists()
            or _jvm_running()
        ):
            raise
        log.debug("the JVM's start failed: %s", e)
    # The JVM crashed mapping the archive (a damaged file does that): without it, and the
    # next run writes another.
    log.warning("the JVM crashed mapping %s: removed, starting without it", archive.path)
    with contextlib.suppress(OSError):
        archive.path.unlink(missing_ok=True)
        archive.crash_report.unlink()
    return _start(builder.config("spark.driver.defaultJavaOptions", default), home, jvm_output)


def _start(builder: SparkSession.Builder, home: str | None, jvm_output: str | None) -> SparkSession:
    with (
        timed(log, "Spark session"),
        _jvm_output_to(jvm_output),
        spark_home(home),
        ignoring_sigterm(),  # the driver stops it (segcompact.spark.jvm)
    ):
        return builder.getOrCreate()


@contextlib.contextmanager
def _jvm_output_to(path: str | None) -> Iterator[None]:
    """This process's stdout and stderr go to ``path`` (appended; None: stderr) while the
    block runs: a JVM the block starts keeps them as its own, and so do the Python workers it
    starts. What a JVM writes to its stdout (a crash's report) is not a command's output."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.dup(2) if path is None else os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved: dict[int, int] = {}
    try:
        for target in (1, 2):
            with contextlib.suppress(OSError):  # a closed stdout stays closed
                saved[target] = os.dup(target)
                os.dup2(fd, target)
        yield
    finally:
        for target, kept in saved.items():
            os.dup2(kept, target)
            os.close(kept)
        os.close(fd)


def config_settings(config: CompactorConfig, *, long_running: bool = False) -> dict[str, str]:
    """The session settings a config asks for: ``[spark]``, after what its storage needs
    (``s3://`` through S3A, ``AWS_ENDPOINT_URL``), which ``[spark]`` may override.

    A session segcompact starts on its own (not from ``spark-submit``) for a config without
    catalog tables gets a temporary warehouse: nothing uses it, and Spark would otherwise
    leave an empty ``spark-warehouse/`` in the working directory. One that is not
    ``long_running`` (``run --once``, a command) gets :data:`SHORT_LIVED_JVM` as the driver's
    ``spark.driver.defaultJavaOptions`` unless ``[spark]`` sets that key; Spark adds
    ``spark.driver.extraJavaOptions`` (from ``[spark]`` or ``spark-defaults.conf``) after it.
    Where ``[spark]``'s ``spark.driver.extraJavaOptions``, ``JAVA_TOOL_OPTIONS``,
    ``_JAVA_OPTIONS`` or ``JDK_JAVA_OPTIONS`` chooses a garbage collector, the collector is
    left out.
    """
    settings = {**config.storage.spark_settings(), **config.spark}
    if not _launched_by_spark_submit():
        if not any(map(is_table_name, config.state.tables())):
            settings.setdefault("spark.sql.warehouse.dir", _scratch_warehouse())
        if not long_running:
            own = [settings.get("spark.driver.extraJavaOptions", "")]
            own += [os.environ.get(v, "") for v in JAVA_OPTION_VARIABLES]
            # A JVM given two collectors refuses to start: one chosen elsewhere stays alone.
            chosen = any(_CHOOSES_GC.search(options) for options in own)
            settings.setdefault(
                "spark.driver.defaultJavaOptions", SHORT_LIVED_ANY_GC if chosen else SHORT_LIVED_JVM
            )
    return settings


# A JVM that lives seconds to minutes spends more CPU in C2's compiles than their code saves:
# C1 alone took `run --once` on an empty source from 15.5 to 9.2 CPU s, and on 1 GiB of
# segments from 55.6 to 42.4 (wall 36.7 to 33.8 s). Loading Spark's and Delta's classes passes
# the metaspace's default first threshold (about 21 MiB) and each raised one after it, a full
# collection each time: from 256 MiB on, `run --once` on 268 MB had one full collection
# instead of five and spent 1.7 CPU s collecting instead of 2.0 to 2.2 (the JVM's GC log). The
# parallel collector does without G1's concurrent marking and remembered sets: 1.5 CPU s less
# of `run --once` on 268 MB (30.2 to 28.6, 4 runs each), none on an empty source. The
# continuous job keeps C2, G1 and the default metaspace threshold. C1 alone would reserve a
# code cache of 48 MiB, which Spark's generated code fills in minutes (the tests' sessions
# did, and a VACUUM once failed on it): tiered compilation's 240 MiB, reserved, not used.
SHORT_LIVED_ANY_GC = "-XX:TieredStopAtLevel=1 -XX:MetaspaceSize=256m -XX:ReservedCodeCacheSize=240m"
SHORT_LIVED_JVM = f"{SHORT_LIVED_ANY_GC} -XX:+UseParallelGC"
_CHOOSES_GC = re.compile(r"-XX:\+Use\w+GC\b")


@functools.cache
def _scratch_warehouse() -> str:
    path = tempfile.mkdtemp(prefix="segcompact-warehouse-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _apply_hadoop_settings(spark: SparkSession, conf: Mapping[str, str]) -> None:
    hadoop = Storage.of(conf).hadoop
    if not hadoop:
        return
    jsc = getattr(spark.sparkContext, "_jsc", None)
    if jsc is None:
        return  # Spark Connect: the cluster's own settings apply
    target = jsc.hadoopConfiguration()
    for key, value in hadoop.items():
        target.set(key, value)


def _s3_jars() -> list[Path]:
    """S3A's jars (``make setup`` puts them in ``.jars/s3``), none where they are missing."""
    for jars_dir in _candidate_dirs(_S3_JARS_SUBDIR):
        return sorted(p.resolve() for p in jars_dir.glob("*.jar"))
    return []


def find_delta_jars() -> list[Path]:
    """Return the Delta jars to put on the classpath, or raise if ``make setup`` has not run."""
    for jars_dir in _candidate_dirs(_JARS_SUBDIR):
        jars = [max(jars_dir.glob(pattern), default=None) for pattern in _DELTA_JAR_PATTERNS]
        if all(jar is not None for jar in jars):
            return [jar.resolve() for jar in jars if jar is not None]
    where = os.environ.get(JARS_DIR_ENV) or str(_JARS_SUBDIR)
    raise SegcompactError(
        f"Delta Lake's jars (delta-spark, delta-storage) not found in {where}; run `make setup`"
    )


def _candidate_dirs(subdir: Path) -> list[Path]:
    override = os.environ.get(JARS_DIR_ENV)
    if override and subdir == _JARS_SUBDIR:
        return [Path(override).expanduser()]
    # The repo root is an ancestor both of src/ (editable install) and of .venv/ (a regular
    # install into the repo's venv); the working directory covers running from a checkout.
    here = Path(__file__).resolve()
    cwd = Path.cwd().resolve()
    roots = [*here.parents, cwd, *cwd.parents]
    return [root / subdir for root in dict.fromkeys(roots) if (root / subdir).is_dir()]


def executors_in_driver(master: str | None) -> bool:
    """Whether executors run in the driver's JVM (not local-cluster[...])."""
    return master is not None and (master == "local" or master.startswith("local["))


def _jvm_running() -> bool:
    """Whether this process has a JVM already (a stopped session's): none starts then."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def _launched_by_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands the Python driver its gateway port.
    return "PYSPARK_GATEWAY_PORT" in os.environ
