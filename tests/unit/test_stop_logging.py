"""Once a stop is requested, py4j's report of a command cut off by it is dropped; nothing else
is (``spark/job.py`` ``_cut_off_by_the_stop``)."""

from __future__ import annotations

import logging
import sys

import pytest
from py4j.protocol import Py4JError, Py4JNetworkError

from segcompact.spark.job import _cut_off_by_the_stop

PY4J_MESSAGE = "Exception while sending command."


def _record(message: str, error: BaseException | None) -> logging.LogRecord:
    exc_info = None
    if error is not None:
        try:
            raise error
        except BaseException:
            exc_info = sys.exc_info()
    return logging.LogRecord("root", logging.ERROR, __file__, 1, message, None, exc_info)


def test_py4js_report_of_a_cut_off_command_is_dropped() -> None:
    assert not _cut_off_by_the_stop(_record(PY4J_MESSAGE, Py4JNetworkError("reset")))


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (PY4J_MESSAGE, None),
        (PY4J_MESSAGE, Py4JError("an answer the JVM gave")),
        (PY4J_MESSAGE, ConnectionResetError()),
        ("the batch failed", Py4JNetworkError("reset")),
        ("segcompact: batch 0: 7.6 s", None),
    ],
)
def test_every_other_record_passes(message: str, error: BaseException | None) -> None:
    assert _cut_off_by_the_stop(_record(message, error))
