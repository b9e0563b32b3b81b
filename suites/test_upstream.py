"""Bugs reproduced in released components, each a test that names the public issue and the versions, and
asserts the anomaly the issue reports: it fails on the day a fixed release is used, which is the point.

apache/paimon#9666 (open; fix PRs #9667 and #10105 open): Paimon's Spark streaming sink commits a replayed
micro-batch a second time when the driver dies after the table commit and before Spark's commit log.
Run here against `paimon-spark-3.5` 0.9.0 (harness.output.paimon), Spark 3.5: the driver is killed once
batch 2 is a Paimon snapshot and not yet in Spark's commit log, and the table's snapshots are read.

apache/iceberg#15050 (fixed by #15051, in 1.10.2 and 1.11.0): a 503 answered to a REST catalog's CREATE
commit that had landed made Iceberg's client delete files of the table's live snapshot. Run on Spark 4.0
with Iceberg 1.10.1 (the table left corrupt) and 1.11.0 (the commit's state unknown, the batch replayed and
skipped: exactly-once), through the run's REST catalog on its S3 server (`--store s3`).

apache/iceberg#13866 (reconciliation after an unknown commit state, merged as #14320 in 1.11.0): a 5xx
answered to a REST commit that had landed leaves Iceberg 1.10.x's client with an unknown commit state; it
fails the write, and a `foreachBatch` append run again appends the batch a second time (only a streaming
sink's own epoch check saves it). 1.11.0's client reloads the table, finds its snapshot and goes on. Run with
a plain `foreachBatch` append through the REST catalog, on 1.10.1 and 1.11.0.

apache/iceberg#14583 (a commit that landed, retried, its 409 taken for a conflict: the cleanup deleted the
committed snapshot's manifest list; #15511, in 1.10.2 and 1.11.0, cleans up from the refreshed table): a 503
with Retry-After answered to an applied commit makes Iceberg's HTTP client send the commit again, the catalog
answers 409, and the append's retry finds its snapshot in the refreshed table. Run with Spark's own Iceberg
streaming sink on 1.10.1 (the table left without its live snapshot's manifest list) and 1.11.0 (exactly-once).
apache/iceberg#13352 (fixed in 1.9.2; #12818 had made Iceberg's HTTP client retry a request answered 502 or
504, a commit's POST included): a 502 answered to a REST commit that had landed makes Iceberg 1.9.1's client
send the commit again, the catalog answers 409, and the cleanup deletes the live snapshot's manifest list, as
apache/iceberg#14583 does after a 503 with Retry-After. Run with Spark's own Iceberg streaming sink on Spark
3.5 (Iceberg's Spark 4.0 runtime starts at 1.10.0) with Iceberg 1.9.1 (the table left corrupt) and 1.9.2 (the
502 fails the batch, whose replay is skipped: exactly-once).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.output.paimon import RELEASES
from harness.run.scenario_result import ScenarioResult
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


def commit_answers(result: ScenarioResult) -> list:
    """The REST catalog's answers to the commits, in order."""
    return [e.get("status") for e in result.events("point") if e["point"] == "catalog.commit"
            and e.get("phase") == "response"]


def assert_manifest_list_deleted(result: ScenarioResult, issue: str) -> dict:
    """The run ended `table_corrupt`, a snapshot's manifest list gone (Iceberg's client deleted it); its example."""
    corrupt = result.verdict.anomalies.get("table_corrupt")
    assert corrupt is not None, f"{issue} did not reproduce: {result.summary()}"
    assert "/metadata/snap-" in corrupt.examples[0]["missing"], corrupt.examples
    return corrupt.examples[0]


@pytest.mark.iceberg("1.10.1")
def test_iceberg_15050_a_503_to_a_create_commit_that_landed_deletes_the_live_snapshot_s_files(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_15050(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.10.1"
    assert assert_manifest_list_deleted(result, "apache/iceberg#15050")["after"] == FAIL_CREATE_COMMIT


@pytest.mark.iceberg("1.11.0")
def test_iceberg_15050_is_fixed_in_1_11_0_the_commit_state_unknown_and_the_replay_skipped(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_15050(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.11.0"
    assert result.events("query.failed"), "the 503 did not fail the batch"
    assert result.exactly_once, result.summary()


PLAIN_APPEND = "bad_iceberg_blind_append"  # a foreachBatch append, as users write it: nothing names its batch
FAIL_APPEND_COMMIT = "fail:sender@catalog.commit#2/503"  # after the CREATE, an append


def iceberg_13866(eo_scenario) -> ScenarioResult:  # type: ignore[no-untyped-def]
    """A `foreachBatch` append into the run's REST catalog; the catalog applies an append's commit and the gate
    answers 503 in its place, as a proxy in front of a catalog may."""
    result = eo_scenario(sink=PLAIN_APPEND, output="iceberg", store="s3", faults=[FAIL_APPEND_COMMIT],
                         records=RECORDS)
    assert_fired_with_effect(result, FAIL_APPEND_COMMIT)
    held = next(e for e in result.events("hold") if e["point"] == "catalog.commit" and e["phase"] == "response")
    table = held["tables"][0]
    assert held["status"] == 200 and table["adds_snapshots"] and not table["creates"], held  # an append, applied
    return result


@pytest.mark.iceberg("1.10.1")
def test_iceberg_13866_in_1_10_1_a_503_to_an_applied_append_fails_the_batch_and_its_replay_appends_it_again(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_13866(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.10.1"
    assert result.events("query.failed"), "the 503 did not fail the batch"
    anomalies = result.verdict.anomalies
    assert "batch_committed_twice" in anomalies and "duplicate" in anomalies, \
        f"apache/iceberg#13866 did not reproduce: {result.summary()}"
    assert "lost" not in anomalies and "table_corrupt" not in anomalies, result.verdict.summary()


@pytest.mark.iceberg("1.11.0")
def test_iceberg_13866_is_fixed_in_1_11_0_the_client_finds_its_snapshot_and_the_batch_goes_on(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_13866(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.11.0"
    assert not result.events("query.failed"), result.events("query.failed")
    assert result.exactly_once, result.summary()


RETRIED_COMMIT = "fail:sender@catalog.commit#2/503,retry-after=1"  # batch 0's append, after the CREATE


def iceberg_14583(eo_scenario) -> ScenarioResult:  # type: ignore[no-untyped-def]
    """Spark's Iceberg streaming sink into the run's REST catalog on S3; the catalog applies batch 0's commit,
    the gate answers 503 with Retry-After in its place, and Iceberg's client sends the commit again, which the
    catalog refuses (409: the table moved on, by that very commit)."""
    result = eo_scenario(sink="iceberg_streaming", output="iceberg", store="s3", faults=[RETRIED_COMMIT],
                         records=RECORDS, engine_read=True)
    assert_fired_with_effect(result, RETRIED_COMMIT)
    answers = commit_answers(result)
    assert 409 in answers, f"the client did not send the applied commit again: the catalog answered {answers}"
    return result


@pytest.mark.iceberg("1.10.1")
def test_iceberg_14583_in_1_10_1_a_retried_commit_s_409_deletes_the_live_snapshot_s_manifest_list(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_14583(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.10.1"
    assert_manifest_list_deleted(result, "apache/iceberg#14583")


@pytest.mark.iceberg("1.11.0")
def test_iceberg_14583_is_fixed_in_1_11_0_the_retried_commit_keeps_its_snapshot(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    result = iceberg_14583(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.11.0"
    assert result.exactly_once, result.summary()


RETRIED_ON_502 = "fail:sender@catalog.commit#2/502"  # batch 0's append, after the CREATE


def iceberg_13352(eo_scenario) -> ScenarioResult:  # type: ignore[no-untyped-def]
    """Spark's Iceberg streaming sink into the run's REST catalog on S3; the catalog applies batch 0's commit
    and the gate answers 502 in its place."""
    result = eo_scenario(sink="iceberg_streaming", output="iceberg", store="s3", faults=[RETRIED_ON_502],
                         records=RECORDS)
    assert_fired_with_effect(result, RETRIED_ON_502)
    return result


@pytest.mark.spark("3.5")
@pytest.mark.iceberg("1.9.1")
def test_iceberg_13352_in_1_9_1_a_commit_retried_after_a_502_deletes_the_live_snapshot_s_manifest_list(  # type: ignore[no-untyped-def]
        eo_scenario) -> None:
    result = iceberg_13352(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.9.1"
    assert 409 in commit_answers(result), f"the client did not send the commit again: {commit_answers(result)}"
    assert_manifest_list_deleted(result, "apache/iceberg#13352")


@pytest.mark.spark("3.5")
@pytest.mark.iceberg("1.9.2")
def test_iceberg_13352_is_fixed_in_1_9_2_the_502_fails_the_batch_and_its_replay_is_skipped(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    result = iceberg_13352(eo_scenario)

    assert result.to_dict()["versions"]["iceberg"] == "1.9.2"
    assert 409 not in commit_answers(result), commit_answers(result)
    assert result.events("query.failed"), "the 502 did not fail the batch"
    assert result.exactly_once, result.summary()
