"""Spark's entry point to segcompact's ``kafka-segments`` data source.

Spark looks for Python data sources in every top-level module named ``pyspark_*`` on the Python
path that has a ``DefaultSource`` (SPARK-45917), and registers each under its ``name()`` in any
session, at the first use of a Python data source: installing segcompact makes
``spark.read.format("kafka-segments")`` and ``spark.readStream.format("kafka-segments")`` work
with no ``register(spark)``.
"""

from __future__ import annotations

from segcompact.spark.source import KafkaSegmentsDataSource as DefaultSource

__all__ = ["DefaultSource"]
