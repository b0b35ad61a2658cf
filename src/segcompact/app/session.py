"""The Spark session a command starts, with the config's ``[spark]`` settings; its JVM's output
(Spark's log lines, the JVM's warnings) goes to ``jvm_output``, a file, so that segcompact's own
lines stand alone on stderr (None: stderr).

Imported by the commands that answer without a JVM too: Spark is imported only when a session
is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from segcompact.config import CompactorConfig
    from segcompact.delta.sql import SparkViews, TableSql


def session(
    config: CompactorConfig,
    jvm_output: str | None,
    *,
    long_running: bool = False,
    app_name: str = "segcompact",
) -> SparkSession:
    """The Spark session, with the config's ``[spark]`` settings."""
    from segcompact.spark.session import config_settings, get_spark

    settings = config_settings(config, long_running=long_running)
    return get_spark(
        app_name,
        conf=settings,
        jvm_output=jvm_output,
        long_running=long_running,
        archive_classes=not long_running,
    )


def ensured(config: CompactorConfig, jvm_output: str | None) -> SparkViews:
    """How a read-only command reads the job's tables when delta-rs cannot
    (``segcompact.delta.sql``): by Spark's SQL, its session started on the first call, the
    tables created if missing."""

    def start(views: Mapping[str, str]) -> TableSql:
        from segcompact.spark.table_reader import SparkSql
        from segcompact.spark.tables import Tables

        spark = session(config, jvm_output)
        Tables.of(config).ensure(spark)
        return SparkSql(spark, views)

    return start
