"""Spark settings shared by the test session (``tests/conftest.py``) and the JVMs that the
end-to-end tests' CLI subprocesses start (its ``spark_conf_dir`` fixture)."""

from __future__ import annotations

from pyspark.sql import SparkSession

# Test JVMs are short-lived and cold: C1-only JIT and the parallel collector halve session
# start and the first Delta jobs on two cores. Long-running jobs want C2, so this stays here.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"


def jobs_started(spark: SparkSession) -> int:
    """How many Spark jobs the session's context has started so far (streaming queries' and
    every thread's included): its scheduler's next job id."""
    sc = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
    return int(sc.dagScheduler().nextJobId())
