"""The certification matrix as a CI gate: the reference sinks pass every scenario that applies, Spark's
built-in sink shows duplicates and no loss, and every known-bad sink is caught with its anomaly.

`pytest -m chaos --sink path/to/my_sink.py:sink` runs the whole matrix for that sink instead (the
plugin's harness/sink_matrix.py).
"""

from __future__ import annotations

import pytest

from harness.certify.matrix import MATRIX
from harness.certify.rows import MatrixRun
from harness.settings import given
from harness.sink_matrix import check_row, run_row, short_name

pytestmark = pytest.mark.chaos

TXN = "transactional"
DRIVER_TXN = "driver_transactional"
FAIL_STOP = "fail_stop_transactional"
BUILTIN = "builtin_kafka"
ROWS = {row.name: row for row in MATRIX}
STATELESS = [row for row in MATRIX if not row.stateful]  # this suite runs passthrough; test_stateful the rest

# (sink, scenario, what must be seen); "pass" means exactly-once with the fault fired and effective.
KNOWN = [
    *[(TXN, row.name, "pass") for row in STATELESS if row.applies("transactional")],
    # a driver-side sink has no task attempts that write: no speculation row in its space
    *[(DRIVER_TXN, row.name, "pass") for row in STATELESS if row.applies("transactional") and not row.speculation],
    (BUILTIN, "baseline", "pass"),
    (BUILTIN, "kill-sender-produce", "duplicate"),
    (BUILTIN, "kill-executor-produce", "duplicate"),
    (BUILTIN, "kill-driver-produce", "duplicate"),
    (BUILTIN, "pause-executor-produce", "duplicate"),
    (BUILTIN, "speculation-produce", "duplicate"),
    ("bad_no_marker_check", "kill-sender-txn.commit", "duplicate"),
    ("bad_marker_second_transaction", "kill-sender-txn.commit", "duplicate"),
    ("bad_random_transactional_id", "pause-executor-txn.pre_commit", "duplicate"),
    ("bad_swallow_commit_errors", "delay-endtxn-txn.pre_commit-long", "lost"),
    ("bad_idempotent_only", "kill-driver-produce", "duplicate"),
    ("bad_short_timeout_ignores_abort", "delay-endtxn-txn.pre_commit-long", "lost"),
    ("bad_resume_from_end_offset", "speculation-produce", "duplicate"),
    ("bad_resume_after_shuffle", "speculation-produce", "duplicate"),
    ("bad_blind_commit_retry", "lost-commit-response", "duplicate"),
    ("bad_skip_failed_batch", "delay-endtxn-txn.pre_commit-long", "lost"),
    # fail-stop: the query fails and the supervisor restarts it (suites/test_faults.py shows the restart)
    *[(FAIL_STOP, row.name, "pass") for row in STATELESS if row.applies("transactional") and not row.speculation],
]
# The CI gate: the reference passing at the commit point and two attempts of a task at once caught; the
# known-bad sink caught at the commit point is suites/test_hostile.py's (its tools replaced), test_faults
# gates the built-in sink's sender kill (docs/contributing.md: what the gate proves).
GATE = {(TXN, "kill-sender-txn.commit"), ("bad_resume_after_shuffle", "speculation-produce")}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "certification_case" not in metafunc.fixturenames:
        return
    if given(metafunc.config, "sink"):  # the plugin's matrix for that sink runs instead
        metafunc.parametrize("certification_case", [pytest.param(None, marks=pytest.mark.skip(
            reason="--sink given: its matrix (harness/sink_matrix.py) runs instead of the catalog's"))])
        return
    cases = [
        pytest.param(case, id=f"{case[0]}::{case[1]}", marks=[pytest.mark.gate] if case[:2] in GATE else [])
        for case in KNOWN
    ]
    metafunc.parametrize("certification_case", cases)


def test_certification(cluster, certification_case, stall_timeout, live_rate) -> None:  # type: ignore[no-untyped-def]
    sink, scenario, expected = certification_case
    row = ROWS[scenario]
    result = run_row(cluster, MatrixRun(sink, stall_timeout=stall_timeout, rate=live_rate), row,
                     f"{short_name(sink)}-{scenario}")
    check_row(result, expected)
    if expected != "pass":  # caught by this row's fault, not by something else
        assert result.events("effect"), "the fault fired but no effect was recorded"
        explained = [e["explanation"] for e in result.verdict.anomalies[expected].examples if "explanation" in e]
        assert explained, f"no {expected} example explained from the broker's log: {result.summary()}"
        assert "What happened to them" in (result.report_dir / "index.html").read_text()
