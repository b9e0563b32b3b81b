"""Bugs reproduced in released components, each a test that names the public issue and the versions, and
asserts the anomaly the issue reports: it fails on the day a fixed release is used, which is the point.

apache/paimon#9666 (open; fix PRs #9667 and #10105 open): Paimon's Spark streaming sink commits a replayed
micro-batch a second time when the driver dies after the table commit and before Spark's commit log.
Run here against `paimon-spark-3.5` 0.9.0 (harness.output.paimon), Spark 3.5: the driver is killed once
batch 2 is a Paimon snapshot and not yet in Spark's commit log, and the table's snapshots are read.

apache/iceberg#15050 (fixed by #15051, in 1.10.2 and 1.11.0): a 503 answered to a REST catalog's CREATE
commit that had landed made Iceberg's client delete files of the table's live snapshot. Run on Spark 4.0
with Iceberg 1.10.1 (the table left corrupt) and 1.11.0 (the commit's state unknown, the batch replayed and
skipped: exactly-once), through the run's REST catalog on its S3 server (`--store s3`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.output.paimon import RELEASES
from harness.run.scenario import ScenarioResult
from suites.test_faults import assert_fired_with_effect
from suites.test_tables import AT_TABLE_COMMIT, RECORDS, assert_killed_at_the_table_commit

pytestmark = [pytest.mark.chaos, pytest.mark.upstream]


@pytest.mark.spark("3.5")
def test_paimon_9666_the_streaming_sink_commits_a_replayed_batch_twice(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    result = eo_scenario(sink="paimon_streaming", output="paimon", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert result.to_dict()["versions"]["paimon"] == RELEASES["3.5"]
    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    twice = anomalies["batch_committed_twice"].examples if "batch_committed_twice" in anomalies else []
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, \
        f"apache/paimon#9666 did not reproduce: {result.summary()}"
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()


CREATE_WITH_FIRST_BATCH = Path(__file__).resolve().parents[1] / "fixtures" / "user_sinks" / \
    "iceberg_create_with_first_batch.py"
FAIL_CREATE_COMMIT = "fail:sender@catalog.commit/503"  # its first commit: the CREATE


def iceberg_15050(eo_scenario) -> ScenarioResult:  # type: ignore[no-untyped-def]
    """apache/iceberg#15050 (fixed by #15051 in 1.10.2 and 1.11.0): a 5xx answered to a REST CREATE
    transaction's commit that the catalog had applied was a cleanable failure, and the client deleted files
    of the table's live snapshot. Here the sink creates its Iceberg table with its first batch
    (`writeTo(...).create()`) in the run's REST catalog, on the S3 server; the catalog applies that commit
    and the gate answers 503 in its place."""
    result = eo_scenario(sink=f"{CREATE_WITH_FIRST_BATCH}:sink", output="iceberg", store="s3",
                         faults=[FAIL_CREATE_COMMIT], records=RECORDS)
    assert_fired_with_effect(result, FAIL_CREATE_COMMIT)
    [created, answered] = [e for e in result.events("point") if e["point"] == "catalog.commit"][:2]
    assert created["tables"][0]["creates"] and answered["status"] == 200, (created, answered)  # applied
    return result


@pytest.mark.iceberg("1.10.1")
def test_iceberg_15050_a_503_to_a_create_commit_that_landed_deletes_the_live_snapshot_s_files(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_15050(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.10.1"
    corrupt = result.verdict.anomalies.get("table_corrupt")
    assert corrupt is not None, f"apache/iceberg#15050 did not reproduce: {result.summary()}"
    assert "/metadata/snap-" in corrupt.examples[0]["missing"], corrupt.examples  # the live snapshot's manifest list
    assert corrupt.examples[0]["after"] == FAIL_CREATE_COMMIT


@pytest.mark.iceberg("1.11.0")
def test_iceberg_15050_is_fixed_in_1_11_0_the_commit_state_unknown_and_the_replay_skipped(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_15050(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.11.0"
    assert result.events("query.failed"), "the 503 did not fail the batch"
    assert result.exactly_once, result.summary()
