"""Stateful pipelines against the real cluster: the fraud windows' state (window counts) is restored
with the source offsets, so the reference sink emits every closed window once with its exact count
through a driver kill, and Spark's built-in sink repeats whole windows (duplicates, no loss, no wrong
count) when a batch is re-run.
"""

from __future__ import annotations

import pytest

from harness.faults.spec import parse_schedule
from harness.scenario import Scenario, ScenarioResult

pytestmark = pytest.mark.chaos
FRAUD = "fixtures.pipelines.fraud_windows"
TXN = "fixtures.sinks.transactional"
BUILTIN = "fixtures.sinks.builtin_kafka"


def run(cluster, name: str, sink: str, *faults: str) -> ScenarioResult:  # type: ignore[no-untyped-def]
    return Scenario(cluster, name, pipeline=FRAUD, sink=sink, faults=parse_schedule(list(faults))).run()


def assert_fired_with_effect(result: ScenarioResult, spec: str) -> None:
    assert spec in {e["step"] for e in result.events("trigger")}, "fault never fired"
    assert spec in {e["fault"] for e in result.events("effect")}, "fault fired without a recorded effect"
    assert not result.events("fault.error"), result.events("fault.error")


def test_fraud_windows_baseline_emits_every_window_once_with_its_count(cluster) -> None:
    result = run(cluster, "fraud-builtin-baseline", BUILTIN)

    assert result.verdict.outcome == "pass", result.verdict.summary()
    assert result.verdict.distinct == result.verdict.expected > 1_000


@pytest.mark.gate
def test_fraud_windows_reference_sink_survives_a_driver_kill(cluster) -> None:
    spec = "kill:driver@txn.pre_commit#10"
    result = run(cluster, "fraud-txn-kill-driver", TXN, spec)

    assert_fired_with_effect(result, spec)
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_fraud_windows_builtin_sink_repeats_windows_when_a_batch_is_re_run(cluster) -> None:
    spec = "kill:driver@produce#3"
    result = run(cluster, "fraud-builtin-kill-driver", BUILTIN, spec)

    assert_fired_with_effect(result, spec)
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"duplicate"}, result.verdict.summary()  # same counts: the state was restored
