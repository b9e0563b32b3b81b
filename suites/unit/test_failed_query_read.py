"""The cause before its consequence: a query that failed is judged by its failure, whatever its output's
read then finds; an output never made is bad input only when the query ran without failing."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import BadInput
from harness.history import History, read_history
from harness.run.driver_supervisor import CRASH_LOOP, QUERY_FAILED
from harness.run.output_verdict import OutputVerdict

pytestmark = pytest.mark.unit


class NoTable:
    """An output the sink never made, as each table store says it."""

    name, where = "delta", "/checkpoints/s-table"

    def read(self, on_batch):  # type: ignore[no-untyped-def]
        raise BadInput(f"the sink wrote no Delta table at {self.where}")


def read(tmp_path: Path, incomplete: dict | None):  # type: ignore[no-untyped-def]
    history = History(tmp_path / "history.jsonl")
    try:
        return OutputVerdict("s", history, False, None).read(NoTable(), lambda batch: None,  # type: ignore[arg-type]
                                                             incomplete)
    finally:
        history.close()


@pytest.mark.parametrize("anomaly", [CRASH_LOOP, QUERY_FAILED])
def test_a_failed_query_is_read_as_empty_and_the_missing_table_recorded(tmp_path: Path, anomaly: str) -> None:
    result = read(tmp_path, {"anomaly": anomaly, "reason": "the query failed: RuntimeError: boom"})
    assert len(result.records) == 0
    [event] = read_history(tmp_path / "history.jsonl", ("read.none",))
    assert event["output"] == "delta" and "wrote no Delta table" in event["why"]


@pytest.mark.parametrize("incomplete", [None, {"reason": "no progress for 180 s"}])
def test_a_missing_table_is_bad_input_when_the_query_did_not_fail(tmp_path: Path, incomplete: dict | None) -> None:
    with pytest.raises(BadInput, match="wrote no Delta table"):
        read(tmp_path, incomplete)
