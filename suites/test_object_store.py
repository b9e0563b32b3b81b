"""Tables on the run's S3 server (`--store s3`): Spark's Delta sink writes an `s3a://` table to versitygw
through the gate, the harness reads it from the server over its own tunnel, and the run is judged as on
the volume."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.output.object_store.server import BUCKET, attached
from harness.run.session import scenario
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
RECORDS = 3000  # three batches: the fault at batch 2, its replay the last


def test_a_delta_table_on_s3_is_written_through_the_gate_and_read_from_the_server(cluster) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cluster, "delta-s3-baseline", sink="delta_streaming", output="delta", store="s3",
                      records=RECORDS).run()

    assert result.exactly_once, result.summary()
    assert result.where == f"{BUCKET}/delta-s3-baseline-table" and result.to_dict()["output"]["store"] == "s3"
    log = [name for name in attached(cluster).files.walk(result.where) if name.startswith("_delta_log/")]
    assert any(name.endswith(".json") for name in log), log
    reached = {(e["service"], e["role"]) for e in result.events("gate.connection")}
    assert ("s3", "driver") in reached and ("s3", "executors") in reached, reached


def test_an_iceberg_table_in_the_rest_catalog_on_s3_is_read_as_the_catalog_points(cluster) -> None:  # type: ignore[no-untyped-def]
    """Iceberg's streaming sink into the run's REST catalog (its tables in PostgreSQL, its files on the S3
    server), both reached through the gate; the harness reads the version the catalog points at."""
    result = scenario(cluster, "iceberg-s3-baseline", sink="iceberg_streaming", output="iceberg", store="s3",
                      records=RECORDS).run()

    assert result.exactly_once, result.summary()
    reached = {(e["service"], e["role"]) for e in result.events("gate.connection")}
    assert {("catalog", "driver"), ("s3", "driver"), ("s3", "executors")} <= reached, reached
    versions = [e["version"] for e in result.events("table.committed")]
    assert versions and versions == sorted(versions) and versions[0] == 0, versions


@pytest.mark.gate
def test_a_delta_commit_put_whose_sender_dies_is_committed_once(cluster) -> None:  # type: ignore[no-untyped-def]
    """The driver killed as its PUT of a log entry reaches the gate (Delta's S3 log store writes it from the
    driver): the server never saw it, the replayed batch commits it once."""
    fault = "kill:sender@s3.put#3"
    result = scenario(cluster, "delta-s3-kill-sender-put", sink="delta_streaming", output="delta", store="s3",
                      faults=[fault], records=RECORDS).run()

    assert_fired_with_effect(result, fault)
    put = next(e for e in result.events("point") if e["point"] == "s3.put")
    assert put["role"] == "driver" and "_delta_log/" in put["key"], put
    assert result.exactly_once, result.summary()


IDEMPOTENT_APPEND = Path(__file__).resolve().parents[1] / "fixtures" / "user_sinks" / \
    "iceberg_create_with_first_batch.py"


def test_an_iceberg_rest_commit_applied_and_its_answer_lost_is_committed_once(cluster) -> None:  # type: ignore[no-untyped-def]
    """The lost commit response: the catalog applies the commit, the gate closes the connection in place of
    its answer. The write fails, and the sink's replay of the batch finds the batch in the table's snapshots
    and skips it: one copy of each record. (A `foreachBatch` sink that names its batch in each snapshot: Spark's
    own streaming sink has been seen to fail this row, docs/guides/tables/object-storage.md.)"""
    fault = "drop:sender@catalog.commit#2"
    result = scenario(cluster, "iceberg-s3-drop-catalog-commit", sink=f"{IDEMPOTENT_APPEND}:sink", output="iceberg",
                      store="s3", faults=[fault], records=RECORDS).run()

    assert_fired_with_effect(result, fault)
    answered = [e for e in result.events("point") if e["point"] == "catalog.commit" and e["phase"] == "response"]
    assert answered and all(e["status"] == 200 for e in answered), answered
    assert result.events("query.failed"), "the lost answer did not fail the write"
    assert result.exactly_once, result.summary()


# the gate runs Iceberg's lost answer and held commit together, in one run of a hostile sink (test_hostile.py)
@pytest.mark.parametrize("sink", ["delta_streaming", "iceberg_streaming"])
def test_a_driver_killed_at_a_table_commit_on_s3_dies_while_the_gate_holds_its_answer(cluster, sink: str) -> None:  # type: ignore[no-untyped-def]
    """On object storage no folder shows the driver its own commit, so the gate holds the commit's answer (an
    applied PUT of a log entry, an applied catalog commit) until the harness has seen the version: the kill
    lands before Spark's commit log has the batch, never after it. (The gate's test of a table on S3 too:
    written through the gate by the driver and the executors, read from the server where the catalog points.)"""
    fault = "kill:driver@table.committed:2"
    output = sink.partition("_")[0]
    result = scenario(cluster, f"{output}-s3-kill-driver-committed", sink=sink, output=output, store="s3",
                      faults=[fault], records=RECORDS).run()

    assert_fired_with_effect(result, fault)
    assert not result.events("point.missed"), result.events("point.missed")
    point = [e for e in result.events("table.committed") if e["point"] and e["batch"] == 2]
    assert point and point[0]["held"], result.events("table.committed")
    assert result.exactly_once, result.summary()
    assert result.to_dict()["output"]["store"] == "s3"
    reached = {(e["service"], e["role"]) for e in result.events("gate.connection")}
    assert {("s3", "driver"), ("s3", "executors")} <= reached, reached
    if output == "delta":
        assert result.where == f"{BUCKET}/{output}-s3-kill-driver-committed-table", result.where
        log = [name for name in attached(cluster).files.walk(result.where) if name.startswith("_delta_log/")]
        assert any(name.endswith(".json") for name in log), log
    else:
        assert ("catalog", "driver") in reached, reached
        versions = [e["version"] for e in result.events("table.committed")]
        assert versions and versions == sorted(versions) and versions[0] == 0, versions


@pytest.mark.parametrize("output", ["delta", "iceberg"])
def test_a_table_on_s3_with_an_anomaly_is_told_with_what_spark_s_own_read_returns(cluster, output: str) -> None:  # type: ignore[no-untyped-def]
    """`engine_read` on object storage: Spark reads the blind append's table past the gate (Delta's by its
    `s3a://` path, Iceberg's by its name in the run's catalog) and returns what the harness read, the replayed
    batch's rows again."""
    result = scenario(cluster, f"{output}-s3-blind-append-engine-read", sink=f"bad_{output}_blind_append",
                      output=output, store="s3", faults=["kill:driver@table.committed:2"], records=RECORDS,
                      engine_read=True).run()

    assert "duplicate" in result.verdict.anomalies, result.summary()
    read = result.engine_read
    assert read and "error" not in read, read
    assert read["agrees"] and read["rows"] == len(result.read.records) and read["repeated"] > 0, read
