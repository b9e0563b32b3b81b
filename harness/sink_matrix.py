"""The certification matrix of one sink as pytest tests, one test id per scenario:
`pytest -m chaos --sink my_sink.py:sink` (the plugin collects this module when --sink is given, in
any project). Every scenario that applies to the sink's kind, observed from its baseline, must pass;
the others are skipped, saying why.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from harness.code_spec import is_file
from harness.faults.spec import parse_schedule
from harness.matrix import MATRIX, MatrixScenario
from harness.plugin import config_setting
from harness.scenario import Scenario, ScenarioResult

pytestmark = pytest.mark.chaos
ROWS = {row.name: row for row in MATRIX}
STATELESS = [row for row in MATRIX if not row.stateful]  # the matrix of the passthrough pipeline


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sink_scenario" in metafunc.fixturenames:
        sink = config_setting(metafunc.config, "sink")
        metafunc.parametrize("sink_scenario", [(sink, row.name) for row in STATELESS],
                             ids=[f"{sink}::{row.name}" for row in STATELESS])


@pytest.fixture(scope="session")
def sink_kinds(cluster: Any) -> dict[str, str]:
    """A sink's kind, observed from its baseline run (cached per session)."""
    return {}


def short_name(sink: str) -> str:
    """A sink spec as a scenario name's prefix: `transactional`, or `my_sink` for path/to/my_sink.py:sink."""
    module = sink.partition(":")[0].removesuffix(".py") if is_file(sink) else sink.partition(":")[0]
    return re.split(r"[./]", module)[-1]


def kind_of(cluster: Any, sink: str, kinds: dict[str, str], baseline: ScenarioResult | None) -> str:
    if sink not in kinds:
        if baseline is None:
            baseline = run_row(cluster, sink, ROWS["baseline"], f"kind-{short_name(sink)}", 0)
        kinds[sink] = baseline.sink_kind
    return kinds[sink]


def run_row(cluster: Any, sink: str, row: MatrixScenario, name: str, rate: float) -> ScenarioResult:
    return Scenario(cluster, name, sink=sink, faults=parse_schedule(list(row.faults)),
                    rate=rate if row.live else 0.0).run()


def check_row(result: ScenarioResult, row: MatrixScenario, expected: str) -> None:
    """`expected` is "pass" (exactly-once) or the anomaly that must be found; either way every fault
    must have fired and had an effect, and live rows must have produced their input while the stream ran."""
    verdict = result.verdict
    assert "vacuous" not in verdict.anomalies, f"fault never fired: {verdict.summary()}"
    assert not result.events("fault.error"), result.events("fault.error")
    if row.faults:
        assert result.events("effect"), "the fault fired but no effect was recorded"
    if row.live:
        assert result.events("batch.planned")[0]["t"] < result.events("send")[-1]["t"], "input not produced live"
        assert result.latency and result.latency["measured"] == result.sends.acked, result.latency
    if expected == "pass":
        assert verdict.outcome == "pass", result.summary()
    else:
        assert verdict.outcome == "fail" and expected in verdict.anomalies, result.summary()
        if expected == "duplicate":
            assert "lost" not in verdict.anomalies, result.summary()


def test_sink_scenario(cluster: Any, sink_kinds: dict[str, str], sink_scenario: tuple[str, str],
                       live_rate: float) -> None:
    sink, scenario = sink_scenario
    row = ROWS[scenario]
    if scenario != "baseline":
        kind = kind_of(cluster, sink, sink_kinds, None)
        if not row.applies(kind):
            pytest.skip(f"{scenario} applies to {row.applies_to} sinks; {sink} is {kind}")
    result = run_row(cluster, sink, row, f"{short_name(sink)}-{scenario}", live_rate)
    if scenario == "baseline":
        kind_of(cluster, sink, sink_kinds, result)
    check_row(result, row, "pass")
