"""Table outputs against the real cluster: Spark writes a real Delta table on the run's volume, or rows
into a real PostgreSQL; the driver is killed once a batch is in the table but not yet in Spark's commit
log (apache/paimon#9666), and the table's latest snapshot (the rows committed) and its history are
judged. A reference sink passes; a known-bad one commits the replayed batch again, named with its two
versions (transactions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import BadInput
from harness.run.scenario import ScenarioResult
from harness.run.session import scenario
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
AT_TABLE_COMMIT = "kill:driver@table.committed:2"
RECORDS = 4000
USER_SINKS = Path(__file__).resolve().parents[1] / "fixtures" / "user_sinks"
WRONG_PATH = USER_SINKS / "delta_wrong_path.py"
WRONG_TABLE = USER_SINKS / "postgres_wrong_table.py"


def run(cluster, name: str, sink: str, *faults: str, output: str = "delta") -> ScenarioResult:  # type: ignore[no-untyped-def]
    return scenario(cluster, name, sink=sink, faults=faults, records=RECORDS, output=output).run()


def assert_killed_at_the_table_commit(result: ScenarioResult) -> None:
    """The fault fired with batch 2 in the table and not in Spark's commit log, and the driver came back."""
    assert_fired_with_effect(result, AT_TABLE_COMMIT)
    trigger = result.events("trigger")[0]["t"]
    committed_2 = [e["t"] for e in result.events("batch.committed") if e["batch"] == 2]
    assert committed_2 and committed_2[0] > trigger, "Spark committed batch 2 before the fault: not the point"
    at_point = [e for e in result.events("table.committed") if e["batch"] == 2 and e["point"] and e["held"]]
    assert at_point and at_point[0]["t"] <= trigger, "no held table version of batch 2 before the trigger"
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"


@pytest.mark.gate
def test_delta_streaming_sink_is_exactly_once_when_the_driver_dies_at_the_table_commit(cluster) -> None:
    result = run(cluster, "delta-streaming-kill-driver-table-committed", "delta_streaming", AT_TABLE_COMMIT)

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1, f"batch 2 must be in exactly one table version: {batch_2}"
    assert result.to_dict()["versions"]["delta"] and result.to_dict()["output"]["kind"] == "delta"


@pytest.mark.gate
def test_blind_append_commits_the_replayed_batch_twice(cluster) -> None:
    result = run(cluster, "delta-blind-append-kill-driver-table-committed", "bad_delta_blind_append",
                 AT_TABLE_COMMIT)

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice
    assert result.verdict.guarantee == "at-least-once"


def test_a_sink_that_writes_no_table_at_the_path_is_bad_input(cluster) -> None:
    with pytest.raises(BadInput, match=r"no Delta table at /checkpoints/.*-table \(looked for .*_delta_log"):
        run(cluster, "delta-wrong-path", f"{WRONG_PATH}:sink")


@pytest.mark.gate
def test_postgres_reference_sink_is_exactly_once_when_the_driver_dies_held_at_its_commit(cluster) -> None:
    result = run(cluster, "postgres-txn-kill-driver-table-committed", "postgres_foreach_batch_txn", AT_TABLE_COMMIT,
                 output="postgres")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1 and batch_2[0]["app_id"], f"batch 2: one transaction, with its batch row: {batch_2}"
    assert result.to_dict()["output"]["kind"] == "postgres" and result.to_dict()["versions"]["postgres"]


@pytest.mark.gate
def test_postgres_batch_row_in_a_second_transaction_commits_the_replayed_batch_twice(cluster) -> None:
    result = run(cluster, "postgres-second-txn-kill-driver-table-committed", "bad_postgres_batch_row_second_txn",
                 AT_TABLE_COMMIT, output="postgres")

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice
    assert "committed the same rows" in twice[0]["explanation"]
    explained = [e for e in anomalies["duplicate"].examples if "explanation" in e]
    assert explained and "written by transactions" in explained[0]["explanation"], anomalies["duplicate"].examples
    assert result.verdict.guarantee == "at-least-once"


def test_a_postgres_sink_that_writes_another_table_is_bad_input(cluster) -> None:
    with pytest.raises(BadInput, match=r"wrote no rows to PostgreSQL table out_postgres_wrong_table_.*"
                                       r"the database also has public\.results"):
        run(cluster, "postgres-wrong-table", f"{WRONG_TABLE}:sink", output="postgres")
