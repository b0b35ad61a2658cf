"""Reading segcompact's Delta tables: one reader interface (:mod:`.reader`), which engine reads
a table (:mod:`.location`: delta-rs where its location lets it, else Spark), delta-rs's reader
(:mod:`.native`, no JVM), SQL over the tables (:mod:`.sql`) and a version read on executors
(:mod:`.pinned`). Spark's reader and SQL, for what delta-rs cannot open, are in
``segcompact.spark.table_reader``; Spark writes the tables' records
(``segcompact.spark.tables``). A MERGE of a few rows the driver holds is said once
(:mod:`.merge_sql`) and committed by delta-rs where it opens the table (:mod:`.native`), else
by Spark.
"""
