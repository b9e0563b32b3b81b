"""The certification matrix of one sink as pytest tests, one test id per scenario:
`pytest -m chaos --sink my_sink.py:sink` (the plugin collects this module when --sink is given, in
any project). Every scenario that applies to the sink's kind, observed from its baseline, must pass the
one judge (harness.checker.judge), as in `certify`; the others are skipped, saying why.
"""

from __future__ import annotations

import re

import pytest

from harness import settings
from harness.certify.matrix import MATRIX, MatrixScenario
from harness.certify.rows import MatrixRun, row_scenario
from harness.checker.verdict import FAIL, PASS
from harness.cluster.topology import Cluster
from harness.run.scenario import ScenarioResult
from harness.subject.code_spec import is_file

pytestmark = pytest.mark.chaos
ROWS = {row.name: row for row in MATRIX}
STATELESS = [row for row in MATRIX if not row.stateful]  # the matrix of the passthrough pipeline


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sink_scenario" in metafunc.fixturenames:
        sink = settings.given(metafunc.config, "sink")
        metafunc.parametrize("sink_scenario", [(sink, row.name) for row in STATELESS],
                             ids=[f"{sink}::{row.name}" for row in STATELESS])


@pytest.fixture(scope="session")
def sink_kinds(cluster: Cluster) -> dict[str, str]:
    """A sink's kind, observed from its baseline run (cached per session)."""
    return {}


def short_name(sink: str) -> str:
    """A sink spec as a scenario name's prefix: `transactional`, or `my_sink` for path/to/my_sink.py:sink."""
    module = sink.partition(":")[0].removesuffix(".py") if is_file(sink) else sink.partition(":")[0]
    return re.split(r"[./]", module)[-1]


def kind_of(cluster: Cluster, run: MatrixRun, kinds: dict[str, str], baseline: ScenarioResult | None) -> str:
    if run.sink not in kinds:
        if baseline is None:
            baseline = run_row(cluster, run, ROWS["baseline"], f"kind-{short_name(run.sink)}")
        kinds[run.sink] = baseline.sink_kind
    return kinds[run.sink]


def run_row(cluster: Cluster, run: MatrixRun, row: MatrixScenario, name: str) -> ScenarioResult:
    return row_scenario(cluster, run, row, name).run()


def check_row(result: ScenarioResult, expected: str) -> None:
    """`expected` is "pass" (the judge's pass: exactly-once, every fault fired without an injection error
    and had an effect) or the anomaly that must be found (a fail with it; duplicates without loss)."""
    if expected == PASS:
        assert result.outcome == PASS, result.summary()
    else:
        assert result.outcome == FAIL and expected in result.verdict.anomalies, result.summary()
        if expected == "duplicate":
            assert "lost" not in result.verdict.anomalies, result.summary()


def test_sink_scenario(cluster: Cluster, sink_kinds: dict[str, str], sink_scenario: tuple[str, str],
                       stall_timeout: float, live_rate: float) -> None:
    sink, scenario = sink_scenario
    run = MatrixRun(sink, stall_timeout=stall_timeout, rate=live_rate)
    row = ROWS[scenario]
    if scenario != "baseline":
        kind = kind_of(cluster, run, sink_kinds, None)
        if not row.applies(kind):
            pytest.skip(f"{scenario} applies to {row.applies_to} sinks; {sink} is {kind}")
    result = run_row(cluster, run, row, f"{short_name(sink)}-{scenario}")
    if scenario == "baseline":
        kind_of(cluster, run, sink_kinds, result)
    check_row(result, PASS)
