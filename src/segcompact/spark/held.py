"""DataFrames a micro-batch reads in more than one job: computed once, kept until the batch
releases them.

A DataFrame cache (``persist``) encodes every column into compressed in-memory batches, and
decodes them again for each later job: about 2 CPU s of a 268 MB batch, for rows that two or
three jobs read once each. Where Spark's executors run in the driver's JVM (a ``local``
master), the rows are kept as they are instead, in a local checkpoint: no executor can be lost
there while the driver lives, and a cache's lineage is only for recomputing what a lost
executor held. On a cluster, where executors come and go (autoscaling, spot instances) and a
local checkpoint would fail the batch, a cache.

A local checkpoint shows the planner no size (a cache shows its real one once filled), so a
join would never broadcast it: :func:`sized` gives it the broadcast its size calls for.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from segcompact.spark.session import executors_in_driver


def hold(df: DataFrame) -> DataFrame:
    """``df``, computed by the first job that reads it (the stages before the last of that
    query may run here already, under adaptive execution); :func:`release` frees it."""
    if executors_in_driver(df.sparkSession.sparkContext.master):
        return df.localCheckpoint(eager=False)
    return df.persist()


def release(df: DataFrame) -> None:
    """Free what :func:`hold` returned (nothing yet, if no job read it)."""
    spark = df.sparkSession
    if executors_in_driver(spark.sparkContext.master):
        # The plan of a local checkpoint is one LogicalRDD over the checkpointed rows. Its
        # blocks go as an unpersisted RDD's (its own unpersist would also warn, each batch,
        # that a local checkpoint cannot be recomputed).
        rdd = df._jdf.queryExecution().analyzed().rdd()
        spark.sparkContext._jsc.sc().unpersistRDD(rdd.id(), False)
    else:
        df.unpersist()


def sized(df: DataFrame, size_bytes: int) -> DataFrame:
    """``df``, derived from held DataFrames, broadcast in joins if ``size_bytes``, about what a
    join would broadcast of it, is within ``spark.sql.autoBroadcastJoinThreshold`` (under a
    cluster's master ``df`` as it is: a cache's real size is the planner's already)."""
    spark = df.sparkSession
    if not executors_in_driver(spark.sparkContext.master):
        return df
    # The setting as the planner reads it (bytes; negative: no broadcast).
    limit = spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold()
    return F.broadcast(df) if size_bytes <= limit else df
