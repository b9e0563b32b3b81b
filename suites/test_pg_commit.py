"""Faults at `pg.commit` against the real cluster and a real PostgreSQL: Spark's `foreachBatch` sinks reach
the server through the gate, which holds a commit and kills its sender (the server rolls the
transaction back), or lets the commit through and drops its answer (committed, the sink gets an error).
The reference sink (rows and batch row in one transaction) passes both; the batch row in a second
transaction is caught when its sender dies holding that second commit: the replay writes the rows again."""

from __future__ import annotations

import pytest

from harness.run.scenario_result import ScenarioResult
from harness.run.session import scenario
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
RECORDS = 3000  # three batches: the fault at batch 2, its replay the last
KILL = "kill:sender@pg.commit#2"  # the second commit: batch 0's batch row for the known-bad sink
DROP = "drop:sender@pg.commit#2"


def run(cluster, name: str, sink: str, fault: str) -> ScenarioResult:  # type: ignore[no-untyped-def]
    return scenario(cluster, name, sink=sink, faults=(fault,), records=RECORDS, output="postgres").run()


def commits(result: ScenarioResult, phase: str) -> list[dict]:
    return [e for e in result.events("point") if e["point"] == "pg.commit" and e["phase"] == phase]


def assert_killed_holding_the_commit(result: ScenarioResult) -> None:
    """The driver (foreachBatch's sender) died with its second commit held at the gate, never answered,
    and came back."""
    assert_fired_with_effect(result, KILL)
    held = [e for e in result.events("hold") if e.get("point") == "pg.commit"]
    assert held and held[0]["phase"] == "request" and held[0]["role"] == "driver", held
    answered = [e for e in commits(result, "response") if e["connection"] == held[0]["connection"] and
                e["t"] >= held[0]["t"]]
    assert not answered, "the held commit was answered: it reached the server"
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"


@pytest.mark.gate
def test_postgres_reference_sink_is_exactly_once_when_a_commit_answer_is_lost(cluster) -> None:
    result = run(cluster, "postgres-txn-lost-commit-answer", "postgres_foreach_batch_txn", DROP)

    assert_fired_with_effect(result, DROP)
    dropped = [e for e in result.events("drop") if e.get("point") == "pg.commit"]
    assert dropped and dropped[0]["phase"] == "response" and dropped[0]["committed"], dropped  # done, unheard
    failed = result.events("query.failed")  # the sink's psycopg error: Spark's query failed, and was restarted
    assert failed and "closed the connection" in failed[0]["message"] and failed[0]["t"] > dropped[0]["t"], failed
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "the query was not restarted"
    assert result.exactly_once, result.summary()


def test_postgres_reference_sink_is_exactly_once_when_its_sender_dies_holding_a_commit(cluster) -> None:
    result = run(cluster, "postgres-txn-kill-sender-pg-commit", "postgres_foreach_batch_txn", KILL)

    assert_killed_holding_the_commit(result)
    assert result.exactly_once, result.summary()


@pytest.mark.gate
def test_batch_row_in_a_second_transaction_duplicates_when_its_sender_dies_holding_that_commit(cluster) -> None:
    result = run(cluster, "postgres-second-txn-kill-sender-pg-commit", "bad_postgres_batch_row_second_txn", KILL)

    assert_killed_holding_the_commit(result)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    assert "batch_committed_twice" in anomalies, result.verdict.summary()
    assert result.verdict.guarantee == "at-least-once"


def test_jdbc_from_the_executors_duplicates_a_partition_whose_commit_answer_is_lost(cluster) -> None:
    """pgjdbc commits each task's partition from an executor (extended protocol: Execute of COMMIT); its
    answer dropped, the task fails and Spark retries it: the partition is written a second time."""
    fault = "drop:sender@pg.commit#2~executors"
    result = run(cluster, "postgres-jdbc-lost-commit-answer", "bad_postgres_jdbc_executors", fault)

    assert_fired_with_effect(result, fault)
    dropped = [e for e in result.events("drop") if e.get("point") == "pg.commit"]
    assert dropped and (dropped[0]["role"], dropped[0]["via"], dropped[0]["committed"]) == ("executors", "E", True)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
