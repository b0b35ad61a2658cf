"""What the running PySpark offers a Python streaming data source, where its versions differ.

PySpark 4.2 (SPARK-55304) gave Python streaming readers admission control and
``Trigger.AvailableNow`` (``pyspark.sql.streaming.datasource.SupportsTriggerAvailableNow``); 4.0
and 4.1 (Databricks Runtime 17.x and 18) have neither. There, Spark runs a query whose source
does not support ``availableNow`` as a single batch (SPARK-45178, since 4.0), so ``--once``
asks for that batch outright with ``Trigger.Once``: one ``latestOffset`` (one discovery), one
batch up to it, then the query ends, which is what ``availableNow`` does with the source's
target fixed when it starts, without the split into ``maxSegmentsPerTrigger`` batches that
those versions cannot ask a Python source for anyway.
"""

from __future__ import annotations

import importlib


def python_source_available_now() -> bool:
    """Whether Python streaming sources can support ``Trigger.AvailableNow`` here."""
    try:
        datasource = importlib.import_module("pyspark.sql.streaming.datasource")
    except ImportError:  # PySpark 4.0, 4.1
        return False
    return hasattr(datasource, "SupportsTriggerAvailableNow")


def once_trigger() -> dict[str, bool]:
    """The ``DataStreamWriter.trigger`` argument of ``--once``."""
    return {"availableNow": True} if python_source_available_now() else {"once": True}
