"""Faults at precise points against the real cluster: each fault fires, has an effect, recovers, and
the verdict is the one the sink deserves (the built-in sink duplicates, the transactional one does not).
"""

from __future__ import annotations

import pytest

from harness.catalog.sinks.driver_transactional import TRANSACTION_TIMEOUT_MS
from harness.faults.space import just_above
from harness.run.scenario_result import ScenarioResult
from harness.run.session import scenario

pytestmark = pytest.mark.chaos
BUILTIN = "builtin_kafka"
DRIVER_TXN = "driver_transactional"
REHEARSING_TXN = "rehearsing_driver_transactional"
FAIL_STOP = "fail_stop_transactional"
# held past the driver-side sink's transaction timeout, as the matrix's above-timeout class: the broker aborts
LONG_COMMIT = f"delay:sender@txn.pre_commit#2/{just_above(TRANSACTION_TIMEOUT_MS / 1000)}s"


def run(cluster, name: str, sink: str, *faults: str) -> ScenarioResult:  # type: ignore[no-untyped-def]
    return scenario(cluster, name, sink=sink, faults=faults).run()


def assert_fired_with_effect(result: ScenarioResult, *specs: str) -> None:
    triggered = {e["step"] for e in result.events("trigger")}
    assert set(specs) <= triggered, f"fault never fired: {set(specs) - triggered}"
    effects = {e["fault"] for e in result.events("effect")}
    assert set(specs) <= effects, f"fault fired without a recorded effect: {set(specs) - effects}"
    assert not result.events("fault.error"), result.events("fault.error")


def assert_explained(result: ScenarioResult, kind: str) -> None:
    """An example of the anomaly explained from the broker's log, in the result and on its page."""
    explained = [e["explanation"] for e in result.verdict.anomalies[kind].examples if "explanation" in e]
    assert explained, f"no {kind} example explained: {result.summary()}"
    assert "What happened to them" in (result.report_dir / "index.html").read_text()


@pytest.mark.gate
def test_builtin_sink_duplicates_when_the_sender_dies_mid_produce(cluster) -> None:
    result = run(cluster, "builtin-kill-sender-produce", BUILTIN, "kill:sender@produce#3")

    assert_fired_with_effect(result, "kill:sender@produce#3")
    assert any("new executor" in e["detail"] for e in result.events("recovery")), "executor never relaunched"
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    assert result.verdict.guarantee == "at-least-once"


def test_builtin_sink_duplicates_when_the_driver_dies_mid_produce(cluster) -> None:
    result = run(cluster, "builtin-kill-driver-produce", BUILTIN, "kill:driver@produce#3")

    assert_fired_with_effect(result, "kill:driver@produce#3")
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()


def test_transactional_writer_survives_a_driver_kill_at_pre_commit(cluster) -> None:
    result = run(cluster, "txn-kill-driver-precommit", DRIVER_TXN, "kill:driver@txn.pre_commit#2")

    assert_fired_with_effect(result, "kill:driver@txn.pre_commit#2")
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"
    assert result.read.aborted, "the interrupted transaction left no aborted records: did the fault bite?"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_transactional_writer_survives_a_partition_at_commit(cluster) -> None:
    result = run(cluster, "txn-partition-commit", DRIVER_TXN, "partition:driver@txn.commit#2/10s")

    assert_fired_with_effect(result, "partition:driver@txn.commit#2/10s")
    assert result.events("hold") and result.events("fault.heal"), "no hold or no heal recorded"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_partition_of_the_executors_link_at_commit_heals(cluster) -> None:
    result = run(cluster, "txn-partition-executors", DRIVER_TXN, "partition:executors@txn.commit#2/10s")

    assert_fired_with_effect(result, "partition:executors@txn.commit#2/10s")
    assert result.events("fault.heal")
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_every_trigger_point_fires(cluster) -> None:
    specs = ["delay:sender@txn.init/1s", "delay:sender@txn.first_write/1s", "delay:sender@txn.pre_commit#2/1s",
             "delay:sender@txn.commit#3/1s", "delay:sender@txn.abort#2/1s", "pause:driver@batch.planned:2/2s",
             "pause:executor@batch.committed:4/2s", "pause:worker@time:20/2s"]
    result = run(cluster, "txn-every-point", REHEARSING_TXN, *specs)

    assert_fired_with_effect(result, *specs)
    assert result.read.aborted, "the rehearsal transactions were aborted: their records must count as aborted"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_produce_point_fires_with_a_plain_sink(cluster) -> None:
    result = run(cluster, "builtin-produce-point", BUILTIN, "delay:sender@produce#5/2s")

    assert_fired_with_effect(result, "delay:sender@produce#5/2s")
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_a_point_that_cannot_occur_fails_as_vacuous(cluster) -> None:
    result = run(cluster, "builtin-vacuous", BUILTIN, "kill:sender@txn.pre_commit")

    assert result.verdict.outcome == "fail"
    assert set(result.verdict.anomalies) == {"vacuous"}, result.verdict.summary()
    assert "fault never fired" in result.verdict.anomalies["vacuous"].examples[0]["reason"]


@pytest.mark.gate
def test_a_run_that_stops_moving_is_incomplete_and_unknown_not_a_loss(cluster) -> None:
    spec = "pause:driver@batch.planned:2/120s"
    result = scenario(cluster, "builtin-stalled", sink=BUILTIN, faults=[spec], stall_timeout=20).run()

    assert_fired_with_effect(result, spec)
    verdict = result.verdict
    assert set(verdict.anomalies) == {"incomplete"}, verdict.summary()  # no `lost` for input never reached
    assert verdict.outcome == "unknown" and verdict.guarantee == "unknown", verdict.summary()
    progress = verdict.anomalies["incomplete"].examples[0]
    assert progress["reason"].startswith("no progress for 20 s"), progress
    assert 0 < progress["consumed"] < progress["total"] == 20_000 and progress["records_per_s"] > 0, progress
    assert progress["results_not_reached"] > 0, progress


def test_a_then_step_lands_in_the_recovery_from_the_first_fault(cluster) -> None:
    """`then`: the second driver kill counts its point only once the first fired, so it hits the new
    driver while it recovers. The sink that forgets markers two starts back passes one restart and
    duplicates under two: the second fault must be what made the difference."""
    once = run(cluster, "one-restart-back-once", "bad_markers_one_restart_back", "kill:driver@txn.commit")
    assert once.outcome == "pass", once.summary()
    twice = run(cluster, "one-restart-back-twice", "bad_markers_one_restart_back", "kill:driver@txn.commit",
                "then kill:driver@txn.first_write")
    assert_fired_with_effect(twice, "kill:driver@txn.commit", "then kill:driver@txn.first_write")
    first, second = (e["t"] for e in twice.events("trigger"))
    assert second > first
    assert twice.outcome == "fail" and "duplicate" in twice.verdict.anomalies, twice.summary()
    assert_explained(twice, "duplicate")


def test_a_later_occurrence_finds_what_the_certificates_first_one_misses(cluster) -> None:
    """The sink that writes markers for even batches only survives the driver killed at batch 0's first
    commit (the certificate's occurrence) and duplicates under the same kill at batch 1's first commit
    (the 5th: four partitions, a transaction each)."""
    first = run(cluster, "every-other-batch-commit-1", "bad_markers_every_other_batch", "kill:driver@txn.commit")
    assert_fired_with_effect(first, "kill:driver@txn.commit")
    assert first.outcome == "pass", first.summary()
    later = run(cluster, "every-other-batch-commit-5", "bad_markers_every_other_batch", "kill:driver@txn.commit#5")
    assert_fired_with_effect(later, "kill:driver@txn.commit#5")
    assert later.outcome == "fail" and "duplicate" in later.verdict.anomalies, later.summary()
    assert_explained(later, "duplicate")


def test_a_query_that_fails_on_its_own_is_restarted_and_its_batch_written_once(cluster) -> None:
    """The fail-stop sink raises when the broker aborts its commit: Spark fails the query, the supervisor
    starts it again on its checkpoint, and the re-run batch is written once (fenced, then checked)."""
    result = run(cluster, "fail-stop-commit-aborted", FAIL_STOP, LONG_COMMIT)

    assert_fired_with_effect(result, LONG_COMMIT)
    failed = result.events("query.failed")
    assert failed and "KafkaException" in failed[0]["exception"], failed  # the sink's exception, quoted
    assert len(result.events("query.restart")) == len(failed), "a failed query was not restarted"
    assert result.outcome == "pass", result.summary()


def test_without_a_supervisor_a_failed_query_fails_the_row_with_its_exception(cluster) -> None:
    result = scenario(cluster, "fail-stop-no-supervisor", sink=FAIL_STOP, faults=[LONG_COMMIT], restarts=0).run()

    assert_fired_with_effect(result, LONG_COMMIT)
    assert result.outcome == "fail" and "query_failed" in result.verdict.anomalies, result.summary()
    example = result.verdict.anomalies["query_failed"].examples[0]
    assert "KafkaException" in example["exception"] and LONG_COMMIT in example["explanation"], example
    assert not result.events("query.restart")
