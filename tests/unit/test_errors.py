"""One line for a user out of what Spark and Py4J wrap a failure in."""

from __future__ import annotations

from segcompact.errors import root_cause

SPARK = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent...
  File "/x/pyspark/sql/utils.py", line 117, in call
py4j.protocol.Py4JJavaError: An error occurred while calling o1.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/x/segcompact/compaction/output.py", line 90, in close
OSError: [Errno 28] No space left on device
\tat org.apache.spark.util.SparkErrorUtils.tryWithSafeFinally(SparkErrorUtils.scala:86)
OSError: [Errno 28] No space left on device
"""


def test_the_python_workers_exception_not_its_wrappers() -> None:
    assert root_cause(SPARK) == "OSError: [Errno 28] No space left on device"


def test_a_message_without_one_gives_its_first_line() -> None:
    assert root_cause("  [STREAMING_X] the checkpoint is odd\nmore\n") == (
        "[STREAMING_X] the checkpoint is odd"
    )
    assert root_cause("") == ""
