"""Flink jobs under the same faults (`--engine flink`): a Flink session cluster beside the same Kafka, gate and
checks. The exactly-once reference survives its JobManager killed at the commit's request; the at-least-once job
duplicates when a TaskManager dies mid-write; the job whose transaction timeout is shorter than its recovery loses
what it had pre-committed when the TaskManager asking for its commit dies (its commit, redone by the restored job,
finds the transaction aborted by the broker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.run.flink_session import flink_scenario, flink_session
from harness.run.scenario_result import ScenarioResult
from harness.run.session import Session
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos


@pytest.fixture(scope="module")
def flink() -> Iterator[Session]:
    with flink_session() as opened:
        yield opened


def run(flink: Session, name: str, job: str, *faults: str, records: int = 2000) -> ScenarioResult:
    return flink_scenario(flink.cluster, name, job=job, faults=faults, records=records).run()  # type: ignore[arg-type]


@pytest.mark.gate
def test_exactly_once_job_survives_its_jobmanager_killed_at_the_commit(flink: Session) -> None:
    result = run(flink, "flink-eo-kill-jm-precommit", "kafka_exactly_once", "kill:driver@txn.pre_commit")

    assert_fired_with_effect(result, "kill:driver@txn.pre_commit")
    starts = result.events("container.start")
    assert [e["restart"] for e in starts] == [0, 1], "the job was not submitted again"
    assert starts[1]["restored_from"], "the job was not restored from a checkpoint"
    assert result.verdict.outcome == "pass", result.verdict.summary()


def test_at_least_once_job_duplicates_when_a_taskmanager_dies_mid_write(flink: Session) -> None:
    result = run(flink, "flink-alo-kill-sender-produce", "bad_at_least_once", "kill:sender@produce#2")

    assert_fired_with_effect(result, "kill:sender@produce#2")
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()


def test_short_transaction_timeout_loses_what_the_recovery_outlasted(flink: Session) -> None:
    result = run(flink, "flink-short-timeout-kill-tm", "bad_short_transaction_timeout", "kill:sender@txn.pre_commit")

    assert_fired_with_effect(result, "kill:sender@txn.pre_commit")
    lost = result.verdict.anomalies.get("lost")
    assert lost is not None, result.verdict.summary()
    assert any("aborted at" in example.get("explanation", "") for example in lost.examples), lost.examples


def test_running_totals_job_commits_each_total_once_when_its_taskmanager_dies_at_the_commit(flink: Session) -> None:
    result = run(flink, "flink-totals-kill-tm-precommit", "running_totals_exactly_once", "kill:sender@txn.pre_commit")

    assert_fired_with_effect(result, "kill:sender@txn.pre_commit")
    assert len(result.events("container.start")) == 1, "the JobManager was not to be replaced"
    assert result.verdict.outcome == "pass", result.verdict.summary()
