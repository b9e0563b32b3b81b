"""The certification matrix as a CI gate: the reference sinks pass every scenario that applies, Spark's
built-in sink shows duplicates and no loss, and every known-bad sink is caught with its anomaly.

`pytest -m chaos --sink path/to/my_sink.py:sink` runs the whole matrix for a user's sink instead,
one test id per scenario, each expected to pass (scenarios that do not apply to the sink's observed
kind are skipped, saying why).
"""

from __future__ import annotations

import pytest

from harness.faults.spec import parse_schedule
from harness.matrix import MATRIX, MatrixScenario, kind_from_points
from harness.plugin import config_setting
from harness.scenario import Scenario, ScenarioResult

pytestmark = pytest.mark.chaos

TXN = "fixtures.sinks.transactional"
DRIVER_TXN = "fixtures.sinks.driver_transactional"
BUILTIN = "fixtures.sinks.builtin_kafka"
ROWS = {row.name: row for row in MATRIX}
STATELESS = [row for row in MATRIX if not row.stateful]  # this suite runs passthrough; test_stateful the rest

# (sink, scenario, what must be seen); "pass" means exactly-once with the fault fired and effective.
KNOWN = [
    *[(TXN, row.name, "pass") for row in STATELESS if row.applies("transactional")],
    *[(DRIVER_TXN, row.name, "pass") for row in STATELESS if row.applies("transactional")],
    (BUILTIN, "baseline", "pass"),
    (BUILTIN, "kill-sender-produce", "duplicate"),
    (BUILTIN, "kill-executor-produce", "duplicate"),
    (BUILTIN, "kill-driver-produce", "duplicate"),
    ("fixtures.sinks.bad_no_marker_check", "kill-sender-txn.commit", "duplicate"),
    ("fixtures.sinks.bad_marker_second_transaction", "kill-sender-txn.commit", "duplicate"),
    ("fixtures.sinks.bad_random_transactional_id", "pause-executor-txn.pre_commit", "duplicate"),
    ("fixtures.sinks.bad_swallow_commit_errors", "delay-endtxn-txn.pre_commit-long", "lost"),
    ("fixtures.sinks.bad_idempotent_only", "kill-driver-produce", "duplicate"),
    ("fixtures.sinks.bad_short_timeout_ignores_abort", "delay-endtxn-txn.pre_commit", "lost"),
]
# The CI gate: one scenario each way, so a green CI shows the harness both passes and catches. The
# built-in sink is gated on a driver kill here; test_faults gates its sender kill.
GATE = {(TXN, "kill-sender-txn.commit"), (BUILTIN, "kill-driver-produce"), (TXN, "live-kill-driver-batch.planned"),
        ("fixtures.sinks.bad_no_marker_check", "kill-sender-txn.commit")}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "certification_case" not in metafunc.fixturenames:
        return
    user_sink = config_setting(metafunc.config, "sink")
    if user_sink:  # the kind of a user's sink is observed from its baseline: see test_certification
        cases = [pytest.param((user_sink, row.name, "observe"), id=f"{user_sink}::{row.name}") for row in STATELESS]
    else:
        cases = [
            pytest.param(case, id=f"{case[0].rsplit('.', 1)[-1]}::{case[1]}",
                         marks=[pytest.mark.gate] if case[:2] in GATE else [])
            for case in KNOWN
        ]
    metafunc.parametrize("certification_case", cases)


@pytest.fixture(scope="session")
def sink_kinds(cluster) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A sink's kind, observed from its baseline run (cached per session)."""
    return {}


def kind_of(cluster, sink: str, kinds: dict[str, str], baseline: ScenarioResult | None) -> str:  # type: ignore[no-untyped-def]
    if sink not in kinds:
        if baseline is None:
            baseline = run(cluster, sink, ROWS["baseline"], f"kind-{sink.rsplit('.', 1)[-1].rsplit('/', 1)[-1]}", 0)
        kinds[sink] = kind_from_points({e["point"] for e in baseline.events("point")})
    return kinds[sink]


def run(cluster, sink: str, row: MatrixScenario, name: str, rate: float) -> ScenarioResult:  # type: ignore[no-untyped-def]
    return Scenario(cluster, name, sink=sink, faults=parse_schedule(list(row.faults)),
                    rate=rate if row.live else 0.0).run()


def test_certification(cluster, sink_kinds, certification_case, live_rate) -> None:  # type: ignore[no-untyped-def]
    sink, scenario, expected = certification_case
    row = ROWS[scenario]
    name = f"{sink.rsplit('.', 1)[-1].rsplit('/', 1)[-1].replace(':', '-')}-{scenario}"
    if expected == "observe":  # a user's sink: every scenario that applies to its observed kind must pass
        expected = "pass"
        if scenario != "baseline":
            kind = kind_of(cluster, sink, sink_kinds, None)
            if not row.applies(kind):
                pytest.skip(f"{scenario} applies to {row.applies_to} sinks; {sink} is {kind}")
    result = run(cluster, sink, row, name, live_rate)
    if scenario == "baseline":
        kind_of(cluster, sink, sink_kinds, result)

    verdict = result.verdict
    assert "vacuous" not in verdict.anomalies, f"fault never fired: {verdict.summary()}"
    assert not result.events("fault.error"), result.events("fault.error")
    if row.faults:
        assert result.events("effect"), "the fault fired but no effect was recorded"
    if row.live:
        assert result.events("batch.planned")[0]["t"] < result.events("send")[-1]["t"], "input not produced live"
        assert result.latency and result.latency["measured"] == len(result.sends.acked), result.latency
    if expected == "pass":
        assert verdict.outcome == "pass", verdict.summary()
    else:
        assert verdict.outcome == "fail" and expected in verdict.anomalies, verdict.summary()
        if expected == "duplicate":
            assert "lost" not in verdict.anomalies, verdict.summary()
