"""The deletion SLA: key hashes, erasure scheduling, the report and the scan that proves erasure.

No Spark here: ``segcompact.spark.erasure`` and ``segcompact.spark.ledger`` drive the tables.
"""
