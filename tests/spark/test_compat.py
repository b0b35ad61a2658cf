"""segcompact.spark.compat: ``--once`` asks for ``availableNow`` only where Python streaming
sources can support it (PySpark 4.2), else for ``Trigger.Once``. No Spark session needed."""

from __future__ import annotations

import sys

import pyspark
import pytest

from segcompact.spark.compat import once_trigger, python_source_available_now


def test_pyspark_4_2_offers_available_now_to_python_sources() -> None:
    assert pyspark.__version__.startswith("4.2.")
    assert python_source_available_now()
    assert once_trigger() == {"availableNow": True}


def test_before_pyspark_4_2_once_is_trigger_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # PySpark 4.0 and 4.1 have no pyspark.sql.streaming.datasource: None in sys.modules makes
    # its import fail as a missing module does.
    monkeypatch.setitem(sys.modules, "pyspark.sql.streaming.datasource", None)
    assert not python_source_available_now()
    assert once_trigger() == {"once": True}
