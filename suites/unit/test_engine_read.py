"""What Spark's own read of a table is said to return beside the harness's read (harness.run.engine_read):
the same rows, other rows, or a failure named by its error line."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.client.records import Records
from harness.run.engine_read import compared, error_line, said

pytestmark = pytest.mark.unit


def harness_read(*rows: tuple[bytes, bytes]) -> Records:
    return Records.run(0, 0, [key for key, _ in rows], [value for _, value in rows])


def test_the_same_rows_twice_are_said_to_agree_with_their_repeats_counted() -> None:
    rows = [(b"k1", b"v1"), (b"k2", b"v2"), (b"k2", b"v2")]
    found = compared(Counter(rows), harness_read(*rows))
    assert found == {"rows": 3, "distinct": 2, "repeated": 1, "agrees": True}
    assert said(found) == "Spark's read of the table returns 3 rows, 1 of them again: the rows the harness read"


def test_rows_read_by_one_reader_only_are_counted_on_each_side() -> None:
    found = compared(Counter([(b"k1", b"v1"), (b"k3", b"v3")]), harness_read((b"k1", b"v1"), (b"k2", b"v2")))
    assert not found["agrees"] and found["only_spark"] == 1 and found["only_harness"] == 1
    assert said(found).endswith("1 rows only in Spark's, 1 only in the harness's")


def test_a_failed_read_is_said_by_its_exception_s_line() -> None:
    stderr = """Traceback (most recent call last):
  File "<string>", line 11, in <module>
pyspark.errors.exceptions.captured.SparkException: [FAILED_READ_FILE.NO_HINT] Error while reading file x.parquet.
	at org.apache.spark.sql.errors.QueryExecutionErrors$.cannotReadFilesError(QueryExecutionErrors.scala:1)
26/12/02 00:00:00 INFO ShutdownHookManager: Shutdown hook called
"""
    line = error_line(stderr)
    assert line.startswith("pyspark.errors.exceptions.captured.SparkException: [FAILED_READ_FILE"), line
    assert said({"error": line}).startswith("Spark's read of the table fails: pyspark.errors")
