"""Stateful pipelines against the real cluster: the state (window counts, running totals) is restored
with the source offsets, so the reference sink emits every result once with its exact value through
driver and executor kills, under every state store provider; Spark's built-in sink repeats whole
results (duplicates, no loss, no wrong value) when a batch is re-run.
"""

from __future__ import annotations

import pytest

from harness.faults.spec import parse_schedule
from harness.matrix import MATRIX, MatrixScenario
from harness.scenario import Scenario, ScenarioResult

pytestmark = pytest.mark.chaos
FRAUD = "fixtures.pipelines.fraud_windows"
TOTALS = "fixtures.pipelines.running_totals"
TXN = "fixtures.sinks.transactional"
BUILTIN = "fixtures.sinks.builtin_kafka"
STATE_ROWS = [row for row in MATRIX if row.stateful]


def run(cluster, name: str, pipeline: str, sink: str, *faults: str, state_store: str = "hdfs") -> ScenarioResult:  # type: ignore[no-untyped-def]
    return Scenario(cluster, name, pipeline=pipeline, sink=sink, faults=parse_schedule(list(faults)),
                    state_store=state_store).run()


def assert_fired_with_effect(result: ScenarioResult, spec: str) -> None:
    assert spec in {e["step"] for e in result.events("trigger")}, "fault never fired"
    assert spec in {e["fault"] for e in result.events("effect")}, "fault fired without a recorded effect"
    assert not result.events("fault.error"), result.events("fault.error")


def test_fraud_windows_baseline_emits_every_window_once_with_its_count(cluster) -> None:
    result = run(cluster, "fraud-builtin-baseline", FRAUD, BUILTIN)

    assert result.verdict.outcome == "pass", result.verdict.summary()
    assert result.stateful and result.verdict.distinct == result.verdict.expected > 1_000


@pytest.mark.parametrize(
    "row", [pytest.param(row, id=row.name, marks=[pytest.mark.gate] if row.name == "kill-driver-state.committed"
                         else []) for row in STATE_ROWS])
def test_fraud_windows_reference_sink_survives_a_kill_where_state_is_committed(cluster, row: MatrixScenario) -> None:
    [spec] = row.faults
    result = run(cluster, f"fraud-txn-{row.name}", FRAUD, TXN, spec, state_store=row.state_store)

    assert_fired_with_effect(result, spec)
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_fraud_windows_reference_sink_survives_a_driver_kill_before_its_commit(cluster) -> None:
    spec = "kill:driver@txn.pre_commit#10"
    result = run(cluster, "fraud-txn-kill-driver", FRAUD, TXN, spec)

    assert_fired_with_effect(result, spec)
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_fraud_windows_builtin_sink_repeats_windows_when_a_batch_is_re_run(cluster) -> None:
    spec = "kill:driver@produce#3"
    result = run(cluster, "fraud-builtin-kill-driver", FRAUD, BUILTIN, spec)

    assert_fired_with_effect(result, spec)
    assert set(result.verdict.anomalies) == {"duplicate"}, result.verdict.summary()  # same counts: state restored


def test_running_totals_reference_sink_survives_a_driver_kill(cluster) -> None:
    spec = "kill:driver@state.committed:3"
    result = run(cluster, "totals-txn-kill-driver", TOTALS, TXN, spec, state_store="rocksdb")

    assert_fired_with_effect(result, spec)
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_running_totals_builtin_sink_is_effectively_once_or_at_least_once_under_a_driver_kill(cluster) -> None:
    spec = "kill:driver@produce#3"
    result = run(cluster, "totals-builtin-kill-driver", TOTALS, BUILTIN, spec)

    assert_fired_with_effect(result, spec)
    verdict = result.verdict
    assert set(verdict.anomalies) <= {"duplicate", "regression"} and "duplicate" in verdict.anomalies, verdict.summary()
    assert verdict.guarantee == ("at-least-once" if "regression" in verdict.anomalies else "effectively-once")


DEDUP = "fixtures.pipelines.dedup"


def test_dedup_reference_sink_drops_every_repeat_through_a_driver_kill_where_state_is_committed(cluster) -> None:
    spec = "kill:driver@state.committed:3"
    result = run(cluster, "dedup-txn-kill-driver", DEDUP, TXN, spec, state_store="rocksdb-changelog")

    assert_fired_with_effect(result, spec)
    assert len(result.events("send")) > result.verdict.expected == 20_000, "the input carried no repeats"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_dedup_builtin_sink_repeats_records_when_a_batch_is_re_run(cluster) -> None:
    spec = "kill:driver@produce#3"
    result = run(cluster, "dedup-builtin-kill-driver", DEDUP, BUILTIN, spec)

    assert_fired_with_effect(result, spec)
    assert set(result.verdict.anomalies) == {"duplicate"}, result.verdict.summary()
