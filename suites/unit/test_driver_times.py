"""A driver's start is split by times it and the engine give: when the engine started its container (the
engine's nanosecond clock text) and when the app had its SparkSession (its own line)."""

from __future__ import annotations

import pytest

from harness.cluster.spark import SESSION_READY, engine_time

pytestmark = pytest.mark.unit


def test_the_engine_s_nanosecond_time_is_read_to_the_microsecond() -> None:
    assert engine_time("2026-11-27T07:40:01.123456789Z") == pytest.approx(1795765201.123457, abs=1e-6)
    assert engine_time("2026-11-27T07:40:01Z") == 1795765201.0


def test_the_session_line_is_found_among_spark_s_own() -> None:
    log = ("26/11/27 07:40:02 INFO SparkContext: Running Spark version 4.1.0\n"
           "HARNESS-SESSION-READY t=1795678812.250\n"
           "HARNESS-QUERY-STARTED id=q\n")
    found = SESSION_READY.search(log)
    assert found is not None and float(found.group(1)) == 1795678812.25
