"""The certification matrix of one sink as pytest tests, one test id per scenario: `pytest -m chaos --sink
my_sink.py:sink`, or of a Flink job: `pytest -m chaos --engine flink --job my_job.py` (the plugin collects this
module when either is given, in any project). Every row of the sink's fault space, drawn from its baseline, must
pass the one judge (harness.checker.judge), as in `certify`; rows outside it are skipped, saying why. Test ids
are fixed before the baseline runs, so every row a sink could get is listed, those split by the role that sent a
request (a sink whose driver and executors both commit) included.
"""

from __future__ import annotations

import re
import time

import pytest

from harness import settings
from harness.certify.matrix import (
    BASELINE,
    BROKER_MATRIX,
    MATRIX,
    SPLIT_BY_ROLE,
    MatrixScenario,
    flink_matrix,
    rows_for,
    table_rows,
)
from harness.certify.recorded import row_properties
from harness.certify.rows import MatrixRun, row_scenario, ways_of
from harness.checker.judge import INEFFECTIVE
from harness.checker.verdict import FAIL, PASS
from harness.cluster.topology import Cluster
from harness.faults.space import MIN_BROKERS
from harness.output.registry import store
from harness.plugin_properties import OUTCOME, UNTRIED, record
from harness.run.scenario_result import ScenarioResult
from harness.subject.code_spec import is_file

pytestmark = pytest.mark.chaos
FLINK_MATRIX = flink_matrix(MIN_BROKERS)
BROKER_ROWS = {row.name for row in BROKER_MATRIX + FLINK_MATRIX if row.brokers > 1}  # with --brokers 3, else skipped


def matrix_rows(output: str, where: str, engine: str = "spark") -> list[MatrixScenario]:
    """Every row a sink into `output` (a table on `where`) can get, as `certify` draws them: every kind's
    rows, those split by role, the broker rows, the state rows (a stateless pipeline's baseline leaves them
    out: skipped), and a table's commit points on its store (an S3 PUT, a REST catalog's commit); a Flink job's
    (harness.faults.flink_space)."""
    if engine == settings.FLINK:
        return FLINK_MATRIX
    rows = {row.name: row for row in MATRIX + SPLIT_BY_ROLE + BROKER_MATRIX}
    if store(output).table:
        for row in table_rows(output, where, MIN_BROKERS):
            rows.setdefault(row.name, row)
    return list(rows.values())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sink_scenario" in metafunc.fixturenames:
        config = metafunc.config
        sink = settings.matrix_subject(config)
        rows = matrix_rows(settings.from_pytest(config, "output"), settings.from_pytest(config, "store"),
                           settings.from_pytest(config, "engine"))
        metafunc.parametrize("sink_scenario", [(sink, row.name) for row in rows],
                             ids=[f"{sink}::{row.name}" for row in rows])


@pytest.fixture(scope="session")
def sink_spaces(eo_cluster: Cluster) -> dict[str, dict[str, MatrixScenario]]:
    """A sink's rows by name, drawn from its baseline's fault space (cached per session)."""
    return {}


def short_name(sink: str) -> str:
    """A sink spec as a scenario name's prefix: `transactional`, or `my_sink` for path/to/my_sink.py:sink."""
    module = sink.partition(":")[0].removesuffix(".py") if is_file(sink) else sink.partition(":")[0]
    return re.split(r"[./]", module)[-1]


def rows_of(cluster: Cluster, run: MatrixRun, spaces: dict[str, dict[str, MatrixScenario]],
            baseline: ScenarioResult | None) -> dict[str, MatrixScenario]:
    """The rows of the sink's fault space, from its baseline (run first when no test ran it yet)."""
    if run.sink not in spaces:
        if baseline is None:
            baseline = run_row(cluster, run, BASELINE, f"space-{short_name(run.sink)}")
        spaces[run.sink] = {row.name: row for row in rows_for(baseline.observation, quick=False)}
    return spaces[run.sink]


def run_row(cluster: Cluster, run: MatrixRun, row: MatrixScenario, name: str) -> ScenarioResult:
    """The row's scenario; a class of several ways tries the next while one is ineffective (as certify does)."""
    for way, way_name in ways_of(row, name):
        result = row_scenario(cluster, run, way, way_name).run()
        if result.outcome != INEFFECTIVE:
            break
    return result


def check_row(result: ScenarioResult, expected: str) -> None:
    """`expected` is "pass" (the judge's pass: exactly-once, every fault fired without an injection error
    and had an effect) or the anomaly that must be found (a fail with it; duplicates without loss)."""
    if expected == PASS:
        assert result.outcome == PASS, result.summary()
    else:
        assert result.outcome == FAIL and expected in result.verdict.anomalies, result.summary()
        if expected == "duplicate":
            assert "lost" not in result.verdict.anomalies, result.summary()


def test_sink_scenario(eo_cluster: Cluster, sink_spaces: dict[str, dict[str, MatrixScenario]],
                       sink_scenario: tuple[str, str], eo_stall_timeout: float, eo_live_rate: float,
                       request: pytest.FixtureRequest) -> None:
    sink, scenario = sink_scenario
    run = MatrixRun(sink, stall_timeout=eo_stall_timeout, rate=eo_live_rate,
                    engine=settings.from_pytest(request.config, "engine"))
    row = BASELINE
    if scenario != BASELINE.name:
        found = rows_of(eo_cluster, run, sink_spaces, None).get(scenario)
        if found is None and scenario in BROKER_ROWS and len(eo_cluster.kafka.brokers) < MIN_BROKERS:
            record(request.node, UNTRIED, scenario)  # applicable to production Kafka: the session exits 4
            pytest.skip(f"{scenario} needs --brokers {MIN_BROKERS}: this session has {len(eo_cluster.kafka.brokers)}")
        if found is None:
            pytest.skip(f"{scenario} is not in the fault space {sink}'s baseline showed")
        row = found  # its faults timed by what the baseline showed (the sink's transaction timeout)
    started = time.monotonic()
    result = run_row(eo_cluster, run, row, f"{short_name(sink)}-{scenario}")
    record(request.node, OUTCOME, result.outcome)
    for name, value in row_properties(row, result, time.monotonic() - started):  # for the session's certificate
        record(request.node, name, value)
    if scenario == BASELINE.name:
        rows_of(eo_cluster, run, sink_spaces, result)
    check_row(result, PASS)
