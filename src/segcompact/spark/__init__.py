"""Spark and Delta Lake glue: the only package in segcompact that imports pyspark or delta.

Everything else (the Kafka format codec, compaction semantics, configuration) stays free of
Spark so it can be tested and reused without a JVM.
"""
