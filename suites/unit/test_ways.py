"""A fault class tried more than one way: the next way runs only when one is ineffective, and the row
says which way counted and why the others did not."""

from __future__ import annotations

import pytest

import harness.certify.rows
from harness.certify.certificate import _found
from harness.certify.matrix import MatrixScenario
from harness.certify.rows import MatrixRun, Row, run_row

pytestmark = pytest.mark.unit
ROW = MatrixScenario("speculation-produce", ("delay:sender@produce.sent#1~executors/30s",), speculation=True,
                     ways=(("pause:worker@produce#1~executors/15s",),))


def outcomes(monkeypatch: pytest.MonkeyPatch, *said: str) -> list[str]:
    """Each way's run returns the next outcome; the names the runs were given."""
    names: list[str] = []

    def once(cluster, run, row, name):  # type: ignore[no-untyped-def]
        names.append(name)
        outcome = said[len(names) - 1]
        why = "no task ran twice: Spark launched no speculative copy" if outcome == "ineffective" else None
        return Row(row, outcome, {"duplicate": 3} if outcome == "fail" else {}, 1.0, f"{name}/index.html", why), None

    monkeypatch.setattr(harness.certify.rows, "_run_once", once)
    return names


def test_an_effective_first_way_is_the_only_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    names = outcomes(monkeypatch, "fail")
    row, _ = run_row(None, MatrixRun("s", seed=1, records=1, stall_timeout=1, rate=1, restarts=0), ROW)  # type: ignore[arg-type]
    assert names == ["speculation-produce"] and row.outcome == "fail" and row.scenario.faults == ROW.faults
    assert [w["outcome"] for w in row.ways or []] == ["fail"]


def test_an_ineffective_way_is_followed_by_the_next_and_the_row_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    names = outcomes(monkeypatch, "ineffective", "fail")
    row, _ = run_row(None, MatrixRun("s", seed=1, records=1, stall_timeout=1, rate=1, restarts=0), ROW)  # type: ignore[arg-type]
    assert names == ["speculation-produce", "speculation-produce-way2"]
    assert row.outcome == "fail" and row.scenario.faults == ROW.ways[0] and row.scenario.name == ROW.name
    assert row.report == "speculation-produce-way2/index.html"
    found = _found({"anomalies": row.anomalies, "outcome": row.outcome, "error": row.error, "ways": row.ways})
    assert found == ("duplicate=3 (tried first: delay:sender@produce.sent#1~executors/30s: ineffective "
                     "(no task ran twice: Spark launched no speculative copy))")


def test_when_no_way_is_effective_the_row_is_ineffective_with_every_way_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes(monkeypatch, "ineffective", "ineffective")
    row, _ = run_row(None, MatrixRun("s", seed=1, records=1, stall_timeout=1, rate=1, restarts=0), ROW)  # type: ignore[arg-type]
    assert row.outcome == "ineffective" and [w["outcome"] for w in row.ways or []] == ["ineffective"] * 2
