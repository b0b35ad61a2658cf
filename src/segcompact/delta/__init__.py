"""Reading segcompact's Delta tables: one reader interface (:mod:`.reader`), its delta-rs
implementation (:mod:`.native`, no JVM) and SQL over the tables (:mod:`.sql`). Spark's
implementations, for what delta-rs cannot open, are in ``segcompact.spark.table_reader``; Spark
writes the tables (``segcompact.spark.tables``).
"""
