"""Spark settings shared by the test session (``tests/conftest.py``) and the JVMs that the
end-to-end tests' CLI subprocesses start (its ``spark_conf_dir`` fixture)."""

from __future__ import annotations

from pyspark.sql import SparkSession

# Test JVMs are short-lived and cold: C1-only JIT and the parallel collector halve session
# start and the first Delta jobs on two cores. Long-running jobs want C2, so this stays here.
# C1 alone gets a 48 MiB code cache: a worker's session, which runs every in-process Spark
# test, had it full within minutes (the JVM then flushes and compiles again), and once failed
# a VACUUM with "Out of space in CodeCache for adapters". Tiered compilation's own size.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC -XX:ReservedCodeCacheSize=240m"


def jobs_started(spark: SparkSession) -> int:
    """How many Spark jobs the session's context has started so far (streaming queries' and
    every thread's included): its scheduler's next job id."""
    sc = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
    return int(sc.dagScheduler().nextJobId())
