"""Stateful pipelines against the real cluster: the state (window counts, running totals, ids seen) is
restored with the source offsets, so the reference sink emits every result once with its exact value
through driver and executor kills, under every state store provider; Spark's built-in sink repeats
whole results (duplicates, no loss, no wrong value) when a batch is re-run; and a pipeline that keeps
its state outside Spark passes without faults and is caught when a batch is re-run.
"""

from __future__ import annotations

import pytest

from harness.certify.matrix import MATRIX
from harness.run.scenario_result import ScenarioResult
from harness.run.session import scenario

pytestmark = pytest.mark.chaos
FRAUD = "fraud_windows"
TOTALS = "running_totals"
DEDUP = "dedup"
TXN = "transactional"
BUILTIN = "builtin_kafka"

# (pipeline, fault, state store) the reference sink must pass: every state row of the matrix with the
# fraud windows, a kill before a transaction's commit, and the other pipelines where state is committed
REFERENCE = [
    *[pytest.param(FRAUD, row.faults[0], row.state_store, id=f"fraud_windows::{row.name}")
      for row in MATRIX if row.stateful],
    pytest.param(FRAUD, "kill:driver@txn.pre_commit#10", "hdfs", id="fraud_windows::kill-driver-txn.pre_commit"),
    pytest.param(TOTALS, "kill:driver@state.committed:3", "rocksdb", id="running_totals::kill-driver-state.committed"),
    pytest.param(DEDUP, "kill:driver@state.committed:3", "rocksdb-changelog", id="dedup::kill-driver-state.committed"),
]
# (known-bad pipeline, the fault that re-runs a batch, the anomaly it must show with the reference sink)
KNOWN_BAD = [
    pytest.param("bad_side_store_totals", "kill:driver@txn.pre_commit#2", "wrong_value",
                 id="bad_side_store_totals"),
    pytest.param("bad_side_store_dedup", "kill:driver@txn.pre_commit#2", "lost",
                 id="bad_side_store_dedup"),
]
# (pipeline, the anomalies Spark's built-in sink shows when a driver kill re-runs a batch)
BUILTIN_REPLAY = [
    pytest.param(FRAUD, {"duplicate"}, id="fraud_windows"),  # the same counts again: the state was restored
    pytest.param(DEDUP, {"duplicate"}, id="dedup"),
    pytest.param(TOTALS, {"duplicate", "regression"}, id="running_totals"),  # a subset: see the test
]


def run(cluster, name: str, pipeline: str, sink: str, *faults: str, state_store: str = "hdfs") -> ScenarioResult:  # type: ignore[no-untyped-def]
    return scenario(cluster, name, pipeline=pipeline, sink=sink, faults=faults, state_store=state_store).run()


def assert_fired_with_effect(result: ScenarioResult, spec: str) -> None:
    assert spec in {e["step"] for e in result.events("trigger")}, "fault never fired"
    assert spec in {e["fault"] for e in result.events("effect")}, "fault fired without a recorded effect"
    assert not result.events("fault.error"), result.events("fault.error")


def short(pipeline: str) -> str:
    return pipeline.rsplit(".", 1)[-1].replace("_", "-")


def test_fraud_windows_baseline_emits_every_window_once_with_its_count(cluster) -> None:
    result = run(cluster, "fraud-builtin-baseline", FRAUD, BUILTIN)

    assert result.verdict.outcome == "pass", result.verdict.summary()
    assert result.stateful and result.verdict.distinct == result.verdict.expected > 1_000


@pytest.mark.parametrize(("pipeline", "spec", "state_store"), REFERENCE)
def test_the_reference_sink_keeps_a_stateful_pipeline_exactly_once(cluster, pipeline: str, spec: str,
                                                                   state_store: str) -> None:
    action, point = spec.replace("#", "-").replace(":", "-", 1).split("@")
    name = f"{short(pipeline)}-txn-{action}-{point.replace(':', '-')}-{state_store}"
    result = run(cluster, name, pipeline, TXN, spec, state_store=state_store)

    assert_fired_with_effect(result, spec)
    if spec.startswith("kill:driver"):
        assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"
    if pipeline == DEDUP:
        assert len(result.events("send")) > result.verdict.expected == 20_000, "the input carried no repeats"
    assert result.verdict.outcome == "pass", result.verdict.summary()


@pytest.mark.parametrize(("pipeline", "allowed"), BUILTIN_REPLAY)
def test_the_builtin_sink_repeats_results_when_a_batch_is_re_run(cluster, pipeline: str, allowed: set) -> None:
    spec = "kill:driver@produce#3"
    result = run(cluster, f"{short(pipeline)}-builtin-kill-driver", pipeline, BUILTIN, spec)

    assert_fired_with_effect(result, spec)
    verdict = result.verdict
    assert "duplicate" in verdict.anomalies and set(verdict.anomalies) <= allowed, verdict.summary()
    if pipeline == TOTALS:  # a changelog's repeats: right for an upserting reader unless one went back in time
        assert verdict.guarantee == ("at-least-once" if "regression" in verdict.anomalies else "effectively-once")


@pytest.mark.parametrize(("pipeline", "spec", "anomaly"), KNOWN_BAD)
def test_a_known_bad_pipeline_passes_without_faults_and_is_caught_when_a_batch_is_re_run(
        cluster, pipeline: str, spec: str, anomaly: str) -> None:
    baseline = run(cluster, f"{short(pipeline)}-baseline", pipeline, TXN)
    assert baseline.verdict.outcome == "pass", f"flagged without a fault: {baseline.verdict.summary()}"

    result = run(cluster, f"{short(pipeline)}-kill-driver", pipeline, TXN, spec)

    assert_fired_with_effect(result, spec)
    assert result.verdict.outcome == "fail" and anomaly in result.verdict.anomalies, result.verdict.summary()
