"""Kafka's on-disk log format: records, batches of every magic, codecs, segments and indexes.

Pure Python plus codec libraries and pyarrow; nothing here imports Spark.
"""
