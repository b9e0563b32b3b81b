"""Table outputs against the real cluster: Spark writes a real Delta table on the run's volume, or rows
into a real PostgreSQL; the driver is killed once a batch is in the table but not yet in Spark's commit
log (apache/paimon#9666), and the table's latest snapshot (the rows committed) and its history are
judged. A reference sink passes; a known-bad one commits the replayed batch again, named with its two
versions (transactions). A state table (one row per key) is judged on its rows' final values, its history
telling an idempotent repeat from a batch applied twice."""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest

from harness.catalog.sinks.delta_auto_compaction_txn import COMPACTION
from harness.errors import BadInput
from harness.output.delta.log import DeltaLog
from harness.run.scenario_result import ScenarioResult
from harness.run.session import scenario
from harness.subject.dependencies import Dependencies
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
AT_TABLE_COMMIT = "kill:driver@table.committed:2"
RECORDS = 3000  # three batches: the fault at batch 2, its replay the last
DELTA_SESSION = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                 "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
USER_SINKS = Path(__file__).resolve().parents[1] / "fixtures" / "user_sinks"
WRONG_PATH = USER_SINKS / "delta_wrong_path.py"
WRONG_TABLE = USER_SINKS / "postgres_wrong_table.py"


def run(cluster, name: str, sink: str, *faults: str, pipeline: str = "passthrough",  # type: ignore[no-untyped-def]
        output: str = "delta") -> ScenarioResult:
    return scenario(cluster, name, pipeline=pipeline, sink=sink, faults=faults, records=RECORDS, output=output).run()


def assert_delta_rs_reads_the_same_rows(cluster, result: ScenarioResult, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Delta's own reader (delta-rs) and the harness's hold the same rows of the table Spark wrote: the
    table copied out through the relay, read by `deltalake`."""
    from collections import Counter

    import pyarrow as pa
    from deltalake import DeltaTable as RustTable

    copy = tmp_path / "table"
    for name in cluster.files.walk(result.where):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(cluster.files.read_bytes(f"{result.where}/{name}"))
    table = RustTable(str(copy)).to_pyarrow_table(columns=["key", "value"])
    theirs = Counter(zip(table.column("key").cast(pa.binary()).to_pylist(),
                         table.column("value").cast(pa.binary()).to_pylist(), strict=True))
    assert Counter((r.key(), r.value()) for r in result.read.records) == theirs


def assert_killed_at_the_table_commit(result: ScenarioResult) -> None:
    """The fault fired with batch 2 in the table and not in Spark's commit log, and the driver came back."""
    assert_fired_with_effect(result, AT_TABLE_COMMIT)
    trigger = result.events("trigger")[0]["t"]
    committed_2 = [e["t"] for e in result.events("batch.committed") if e["batch"] == 2]
    assert committed_2 and committed_2[0] > trigger, "Spark committed batch 2 before the fault: not the point"
    at_point = [e for e in result.events("table.committed") if e["batch"] == 2 and e["point"] and e["held"]]
    assert at_point and at_point[0]["t"] <= trigger, "no held table version of batch 2 before the trigger"
    assert [e["restart"] for e in result.events("container.start")] == [0, 1], "driver not restarted"


def test_delta_streaming_sink_is_exactly_once_when_the_driver_dies_at_the_table_commit(cluster, tmp_path) -> None:
    result = run(cluster, "delta-streaming-kill-driver-table-committed", "delta_streaming", AT_TABLE_COMMIT)

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1, f"batch 2 must be in exactly one table version: {batch_2}"
    assert result.to_dict()["versions"]["delta"] and result.to_dict()["output"]["kind"] == "delta"
    assert_delta_rs_reads_the_same_rows(cluster, result, tmp_path)


def test_a_table_partitioned_by_key_is_read_from_its_log_s_partition_values(cluster, tmp_path) -> None:
    partitioned = f"{USER_SINKS / 'delta_partitioned_by_key.py'}:sink"
    result = run(cluster, "delta-partitioned-kill-driver-table-committed", partitioned, AT_TABLE_COMMIT)

    assert_killed_at_the_table_commit(result)
    snapshot = DeltaLog(cluster.files, result.where).snapshot()
    assert snapshot is not None and snapshot.partition_values, "the table is not partitioned: not the case"
    assert all("key" in values for values in snapshot.partition_values.values())
    assert result.exactly_once, result.summary()
    assert len(result.read.records) == RECORDS and None not in result.read.records.keys
    assert_delta_rs_reads_the_same_rows(cluster, result, tmp_path)


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


def test_a_table_anomaly_is_told_with_what_spark_s_own_read_of_the_table_returns(cluster) -> None:  # type: ignore[no-untyped-def]
    """`engine_read`: Spark's batch read of the blind append's table returns what the harness read, batch 2's
    rows again; the result and the report say so."""
    from html import escape

    result = scenario(cluster, "delta-blind-append-engine-read", sink="bad_delta_blind_append",
                      faults=[AT_TABLE_COMMIT], records=RECORDS, output="delta", engine_read=True).run()

    assert "duplicate" in result.verdict.anomalies, result.summary()
    read = result.engine_read
    assert read and read["agrees"] and read["rows"] == len(result.read.records), read
    assert read["repeated"] == result.verdict.anomalies["duplicate"].count, (read, result.summary())
    assert result.report_dir is not None and escape(read["said"]) in (result.report_dir / "index.html").read_text()


def test_a_state_table_merged_idempotently_is_exactly_once_when_the_driver_dies_at_the_table_commit(cluster) -> None:
    """The replayed batch's MERGE carries the same Delta transaction (app id, batch id): Delta skips it."""
    result = run(cluster, "delta-merge-txn-kill-driver-table-committed", "delta_merge_txn", AT_TABLE_COMMIT,
                 pipeline="running_totals")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert [v["operation"] for v in batch_2] == ["MERGE"], f"batch 2 must be in exactly one MERGE: {batch_2}"
    assert result.verdict.expected == len(result.read.records) > 0  # one row per user, each its final total
    assert result.to_dict()["output"] == {"kind": "delta", "where": result.where, "table": "state", "store": "volume"}


@pytest.mark.parametrize("upsert", [
    pytest.param("delta_merge_upsert.py:sink", id="sql-merge"),
    pytest.param("delta_tables_api_upsert.py:sink", id="python-api"),
])
def test_a_plain_upsert_merged_again_is_an_idempotent_repeat_not_a_failure(cluster, upsert: str) -> None:
    """No transaction id: the replayed batch is a second MERGE of batch 2, which sets every key to the value
    it holds. The history shows the repeat; the table is right: effectively-once, a pass. Written in SQL or
    with `from delta.tables import DeltaTable` (the image has Delta's Python API)."""
    name = f"delta-{upsert.split('.')[0].replace('_', '-')}-kill-driver-table-committed"
    result = run(cluster, name, f"{USER_SINKS / upsert}", AT_TABLE_COMMIT, pipeline="running_totals")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once and result.verdict.guarantee == "effectively-once", result.summary()
    repeat = result.events("table.repeat")
    assert [(e["batch"], len(e["versions"])) for e in repeat] == [(2, 2)], repeat
    assert "without changing any row: an idempotent repeat" in repeat[0]["explanation"]
    assert result.verdict.expected == len(result.read.records) > 0  # one row per user, its final total


def test_a_state_table_with_deletion_vectors_is_read_as_spark_reads_it(cluster) -> None:  # type: ignore[no-untyped-def]
    """Each MERGE marks the rows it replaces in a deletion vector: the harness leaves those rows out (else
    every key would have each of its old totals too, `unexpected`), and the replay is an idempotent repeat."""
    upsert = f"{USER_SINKS / 'delta_tables_api_upsert.py'}:sink_with_deletion_vectors"
    result = run(cluster, "delta-dv-upsert-kill-driver-table-committed", upsert, AT_TABLE_COMMIT,
                 pipeline="running_totals")

    assert_killed_at_the_table_commit(result)
    snapshot = DeltaLog(cluster.files, result.where).snapshot()
    assert snapshot is not None and snapshot.deletion_vectors, "no deletion vector in the table: not the case"
    assert result.exactly_once and result.verdict.guarantee == "effectively-once", result.summary()
    assert result.verdict.expected == len(result.read.records) > 0  # one row per user, its final total
    # Spark's own read (delta-rs's Python reader refuses the deletionVectors reader feature)
    assert_spark_reads_the_same_rows(cluster, result, "delta", result.where, DELTA_SESSION)


def test_a_merge_that_adds_applies_the_replayed_batch_twice_in_rows_that_look_unique(cluster) -> None:
    """One row per user: no duplicate to count; the totals are wrong, and the history says by which versions."""
    result = run(cluster, "delta-merge-adds-kill-driver-table-committed", "bad_delta_merge_adds_twice",
                 AT_TABLE_COMMIT, pipeline="running_totals")

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"wrong_value", "batch_committed_twice"}, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice
    versions = ", ".join(map(str, twice[0]["versions"]))
    wrong = anomalies["wrong_value"].examples[0]
    assert wrong["expected"] != wrong["found"] and wrong["key"] in wrong["value"], wrong
    assert wrong["explanation"].startswith(f"batch 2 was applied twice: table versions {versions}"), wrong
    assert result.verdict.guarantee == "none"


def test_a_sink_that_writes_no_table_at_the_path_is_bad_input(cluster) -> None:
    with pytest.raises(BadInput, match=r"no Delta table at /checkpoints/.*-table \(looked for .*_delta_log"):
        run(cluster, "delta-wrong-path", f"{WRONG_PATH}:sink")


def test_postgres_reference_sink_is_exactly_once_when_the_driver_dies_held_at_its_commit(cluster) -> None:
    result = run(cluster, "postgres-txn-kill-driver-table-committed", "postgres_foreach_batch_txn", AT_TABLE_COMMIT,
                 output="postgres")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1 and batch_2[0]["app_id"], f"batch 2: one transaction, with its batch row: {batch_2}"
    assert result.to_dict()["output"]["kind"] == "postgres" and result.to_dict()["versions"]["postgres"]


def test_a_psycopg2_sink_with_its_batch_row_in_the_rows_transaction_is_exactly_once(cluster) -> None:
    """psycopg2 (in the image beside psycopg 3) through the gate: its COMMIT is held like psycopg's."""
    psycopg2_sink = f"{USER_SINKS / 'postgres_psycopg2_batch_txn.py'}:sink"
    result = run(cluster, "postgres-psycopg2-kill-driver-table-committed", psycopg2_sink, AT_TABLE_COMMIT,
                 output="postgres")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1 and batch_2[0]["app_id"], f"batch 2: one transaction, with its batch row: {batch_2}"


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


def test_a_postgres_state_table_upserted_with_its_batch_row_is_exactly_once_at_the_table_commit(cluster) -> None:
    """The upsert and its batch row commit together: the replay finds the row and writes nothing."""
    result = run(cluster, "postgres-upsert-txn-kill-driver-table-committed", "postgres_upsert_txn", AT_TABLE_COMMIT,
                 pipeline="running_totals", output="postgres")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1 and batch_2[0]["app_id"], f"batch 2: one transaction, with its batch row: {batch_2}"
    assert {e["role"] for e in result.events("table.committed")} == {"driver"}  # the writer, through the gate
    assert result.verdict.expected == len(result.read.records) > 0  # one row per user, each its final total
    assert result.to_dict()["output"] == {"kind": "postgres", "where": result.where, "table": "state",
                                          "store": "volume"}


def test_a_postgres_merge_replayed_is_an_idempotent_repeat_its_change_log_shows(cluster) -> None:
    """No batch row: the replay's MERGE rewrites batch 2's rows in place, in a second transaction. The
    harness's change log shows it changed none of them: effectively-once, a pass."""
    merge = f"{USER_SINKS / 'postgres_merge_upsert.py'}:sink"
    result = run(cluster, "postgres-merge-kill-driver-table-committed", merge, AT_TABLE_COMMIT,
                 pipeline="running_totals", output="postgres")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once and result.verdict.guarantee == "effectively-once", result.summary()
    repeat = result.events("table.repeat")
    assert [(e["batch"], len(e["versions"])) for e in repeat] == [(2, 2)], repeat
    assert "in transaction" in repeat[0]["explanation"] and "an idempotent repeat" in repeat[0]["explanation"]


def test_a_postgres_upsert_that_adds_applies_the_replayed_batch_twice_in_rows_that_look_unique(cluster) -> None:
    """One row per user, each rewritten in place: its last writer is all its xmin says; the change log
    names the two transactions of batch 2, and the model the wrong totals."""
    result = run(cluster, "postgres-upsert-adds-kill-driver-table-committed", "bad_postgres_upsert_adds_twice",
                 AT_TABLE_COMMIT, pipeline="running_totals", output="postgres")

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"wrong_value", "batch_committed_twice"}, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice
    transactions = ", ".join(map(str, twice[0]["versions"]))
    wrong = anomalies["wrong_value"].examples[0]
    assert wrong["expected"] != wrong["found"] and wrong["key"] in wrong["value"], wrong
    assert wrong["explanation"].startswith(f"batch 2 was applied twice: transactions {transactions}"), wrong
    assert result.verdict.guarantee == "none"


def test_a_postgres_sink_that_writes_another_table_is_bad_input(cluster) -> None:
    with pytest.raises(BadInput, match=r"wrote no rows to PostgreSQL table out_postgres_wrong_table_.*"
                                       r"the database also has public\.results"):
        run(cluster, "postgres-wrong-table", f"{WRONG_TABLE}:sink", output="postgres")


@pytest.mark.gate
def test_iceberg_streaming_sink_is_exactly_once_when_the_driver_dies_at_the_table_commit(cluster) -> None:
    result = run(cluster, "iceberg-streaming-kill-driver-table-committed", "iceberg_streaming", AT_TABLE_COMMIT,
                 output="iceberg")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1, f"batch 2 must be in exactly one snapshot: {batch_2}"
    assert result.to_dict()["versions"]["iceberg"] and result.to_dict()["output"]["kind"] == "iceberg"


def test_an_iceberg_foreach_batch_sink_that_checks_its_snapshots_is_exactly_once(cluster) -> None:
    result = run(cluster, "iceberg-idempotent-kill-driver-table-committed", "iceberg_foreach_batch_idempotent",
                 AT_TABLE_COMMIT, output="iceberg")

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()


@pytest.mark.gate
def test_an_iceberg_blind_append_commits_the_replayed_batch_twice(cluster) -> None:
    result = run(cluster, "iceberg-blind-append-kill-driver-table-committed", "bad_iceberg_blind_append",
                 AT_TABLE_COMMIT, output="iceberg")

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice


@pytest.mark.spark("3.5")
def test_a_paimon_blind_append_commits_the_replayed_batch_twice(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    """Chaos only, as every test on a cluster of Spark 3.5: the gate has a blind append's duplicates caught on
    Delta and Iceberg."""
    result = eo_scenario(sink="bad_paimon_blind_append", output="paimon", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice


def test_an_iceberg_merge_that_adds_applies_the_replayed_batch_twice(cluster) -> None:
    """One row per user: the totals are wrong, and the snapshots say by which versions."""
    result = run(cluster, "iceberg-merge-adds-kill-driver-table-committed", "bad_iceberg_merge_adds_twice",
                 AT_TABLE_COMMIT, pipeline="running_totals", output="iceberg")

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"wrong_value", "batch_committed_twice"}, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice
    wrong = anomalies["wrong_value"].examples[0]
    assert wrong["explanation"].startswith("batch 2 was applied twice: table versions"), wrong


@pytest.mark.spark("3.5")
def test_hudi_streaming_sink_is_exactly_once_when_the_driver_dies_at_the_table_commit(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    result = eo_scenario(sink="hudi_streaming", output="hudi", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    assert result.exactly_once, result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1, f"batch 2 must be in exactly one commit: {batch_2}"


@pytest.mark.spark("3.5")  # with `-m chaos` (its two minutes, the gate's slowest, bought no other check)
def test_a_hudi_blind_insert_commits_the_replayed_batch_twice(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    result = eo_scenario(sink="bad_hudi_blind_append", output="hudi", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert anomalies["duplicate"].count > 0 and "lost" not in anomalies, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and len(twice[0]["versions"]) == 2, twice


def seq_falls_within_a_file(result: ScenarioResult) -> bool:
    """Whether some key's sequence falls within one data file of the table (rows in no order of the key's)."""
    import json

    highest: dict[tuple[int, bytes | None], int] = {}
    for record in result.read.records:
        where, seq = (record.partition(), record.key()), json.loads(record.value())["seq"]
        if seq < highest.get(where, seq):
            return True
        highest[where] = seq
    return False


@pytest.mark.gate
def test_a_delta_sink_that_orders_its_rows_by_hash_and_auto_compacts_is_exactly_once(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A table keeps no row order: rows sorted by a hash of their value are no `reordered`; and Delta's
    compactions, turned on by the sink's own Spark settings, are no batch's. (The gate's test of a Delta
    table on the volume too: the replayed batch in one version, Delta's own reader agreeing.)"""
    compaction = Dependencies(conf=tuple(sorted(COMPACTION.items())))
    result = scenario(cluster, "delta-hash-ordered-compacted-kill-driver-table-committed",
                      sink="delta_hash_ordered_txn", faults=[AT_TABLE_COMMIT], records=RECORDS, output="delta",
                      dependencies=compaction).run()

    assert_killed_at_the_table_commit(result)
    assert seq_falls_within_a_file(result), "every key's rows in sequence in each file: not the case"
    assert_compactions_are_no_batch_s(result)
    assert result.exactly_once and result.verdict.guarantee == "exactly-once", result.summary()
    batch_2 = [v for v in result.events("table.history")[0]["versions"] if v["batch"] == 2]
    assert len(batch_2) == 1, f"batch 2 must be in exactly one table version: {batch_2}"
    assert result.to_dict()["versions"]["delta"] and result.to_dict()["output"]["kind"] == "delta"
    assert_delta_rs_reads_the_same_rows(cluster, result, tmp_path)


def optimized(result: ScenarioResult) -> list[dict]:
    """The table versions the history marks as rewrites (Delta's OPTIMIZE, Iceberg's replace, Hudi's clustering)."""
    return [v for v in result.events("table.history")[0]["versions"] if v.get("rewrite")]


def assert_compactions_are_no_batch_s(result: ScenarioResult) -> None:
    rewrites = optimized(result)
    assert rewrites and {v["operation"] for v in rewrites} == {"OPTIMIZE"}, "no compaction ran: not the case"
    assert all(v["batch"] is None for v in rewrites)


def test_a_delta_sink_with_auto_compaction_is_exactly_once_its_compactions_no_batch_s(cluster) -> None:  # type: ignore[no-untyped-def]
    result = run(cluster, "delta-auto-compaction-kill-driver-table-committed", "delta_auto_compaction_txn",
                 AT_TABLE_COMMIT)

    assert_killed_at_the_table_commit(result)
    assert_compactions_are_no_batch_s(result)
    assert result.exactly_once and result.verdict.guarantee == "exactly-once", result.summary()


def test_a_blind_append_with_auto_compaction_is_caught_by_its_two_writes_not_its_compactions(cluster) -> None:
    result = run(cluster, "delta-blind-compacted-kill-driver-table-committed", "bad_delta_blind_append_compacted",
                 AT_TABLE_COMMIT)

    assert_killed_at_the_table_commit(result)
    assert optimized(result), "no compaction ran: not the case"
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"duplicate", "batch_committed_twice"}, result.verdict.summary()
    twice = anomalies["batch_committed_twice"].examples
    assert [e["batch"] for e in twice] == [2] and twice[0]["operations"] == ["WRITE", "WRITE"], twice


def assert_spark_reads_the_same_rows(cluster, result: ScenarioResult, format: str, table: str,  # type: ignore[no-untyped-def]
                                     settings: dict[str, str]) -> None:
    """The harness's read (its merge of the table's files) and Spark's own batch read of the same table agree."""
    from collections import Counter

    from harness.output.base import EngineSource
    from harness.run.engine_read import spark_rows

    theirs = spark_rows(cluster, EngineSource(format, table, settings))
    ours = Counter((r.key(), r.value()) for r in result.read.records)
    assert ours == theirs, f"the harness read {sum(ours.values())} rows, Spark {sum(theirs.values())}"


@pytest.mark.spark("3.5")
def test_a_paimon_primary_key_table_is_read_merged_as_spark_reads_it_and_a_replay_is_idempotent(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    """Chaos only, as every test on a cluster of Spark 3.5: in CI it was a third cluster on two cores. The
    unit tests read a primary-key table Paimon wrote (suites/unit/fixtures/paimon)."""
    result = eo_scenario(sink="paimon_primary_key", output="paimon", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    repeats = result.events("table.repeat")  # Paimon's sink commits a replayed batch again (apache/paimon#9666)
    assert [r["batch"] for r in repeats] == [2] and len(repeats[0]["versions"]) == 2, repeats
    assert result.exactly_once and result.verdict.guarantee == "effectively-once", result.summary()
    assert len(result.read.records) == RECORDS
    assert_spark_reads_the_same_rows(eo_scenario.cluster, result, "paimon", result.where, {})


@pytest.mark.spark("3.5")
@pytest.mark.parametrize(("sink", "output"), [("bad_paimon_primary_key_load_time", "paimon"),
                                              ("bad_hudi_merge_on_read_load_time_key", "hudi")])
def test_a_key_that_changes_on_replay_keeps_both_loads(eo_scenario, sink: str, output: str) -> None:  # type: ignore[no-untyped-def]
    """A primary-key (merge-on-read) table read merged: a replay under a key with its load time is new rows."""
    result = eo_scenario(sink=sink, output=output, faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"duplicate", "batch_committed_twice"}, result.verdict.summary()
    assert [e["batch"] for e in anomalies["batch_committed_twice"].examples] == [2]


def test_an_iceberg_merge_on_read_upsert_is_read_with_its_deletes_as_spark_reads_it(cluster) -> None:
    result = run(cluster, "iceberg-mor-upsert-kill-driver-table-committed", "iceberg_merge_on_read_upsert",
                 AT_TABLE_COMMIT, pipeline="running_totals", output="iceberg")

    assert_killed_at_the_table_commit(result)
    deletes = [name for name in cluster.files.walk(result.where) if name.endswith("-deletes.parquet")]
    assert deletes, "no position delete file in the table: not the case"
    assert {v["operation"] for v in optimized(result)} == {"replace"}, "no compaction ran: not the case"
    assert result.exactly_once, result.summary()
    assert result.verdict.expected == len(result.read.records) > 0  # one row per user, its final total
    assert_spark_reads_the_same_rows(cluster, result, "iceberg", result.where, {})


def test_an_iceberg_merge_on_read_upsert_that_adds_applies_the_replayed_batch_twice(cluster) -> None:
    result = run(cluster, "iceberg-mor-adds-kill-driver-table-committed", "bad_iceberg_merge_on_read_adds_twice",
                 AT_TABLE_COMMIT, pipeline="running_totals", output="iceberg")

    assert_killed_at_the_table_commit(result)
    assert {v["operation"] for v in optimized(result)} == {"replace"}, "no compaction ran: not the case"
    anomalies = result.verdict.anomalies
    assert set(anomalies) == {"wrong_value", "batch_committed_twice"}, result.verdict.summary()
    assert [e["batch"] for e in anomalies["batch_committed_twice"].examples] == [2]


@pytest.mark.spark("3.5")
def test_a_hudi_foreach_batch_upsert_keyed_by_the_record_is_exactly_once(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    """Hudi's upsert shuffles a batch by key and rewrites earlier rows into later files: no order is judged,
    and a replayed upsert of the same keys is an idempotent repeat."""
    result = eo_scenario(sink="hudi_foreach_batch_upsert", output="hudi", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    assert seq_falls_within_a_file(result), "every key's rows in sequence in each file: not the case"
    assert {v["operation"] for v in optimized(result)} == {"CLUSTER"}, "no clustering ran: not the case"
    assert result.exactly_once, result.summary()
    assert len(result.read.records) == RECORDS


@pytest.mark.spark("3.5")
def test_a_hudi_merge_on_read_upsert_is_read_merged_as_spark_reads_it(eo_scenario) -> None:  # type: ignore[no-untyped-def]
    """Updates in log files beside the base files, compacted inline: each file slice merged (hudi-rs), as
    Spark's snapshot query reads the table; the compaction a rewrite, a replay an idempotent repeat."""
    from harness.output.hudi import SESSION

    result = eo_scenario(sink="hudi_merge_on_read_upsert", output="hudi", faults=[AT_TABLE_COMMIT], records=RECORDS)

    assert_killed_at_the_table_commit(result)
    logs = [name for name in eo_scenario.cluster.files.walk(result.where) if ".log." in posixpath.basename(name)]
    assert logs, "no log file in the table: not the case"
    assert "COMPACT" in {v["operation"] for v in optimized(result)}, "no compaction ran: not the case"
    assert result.exactly_once, result.summary()
    assert len(result.read.records) == RECORDS
    assert_spark_reads_the_same_rows(eo_scenario.cluster, result, "hudi", result.where, SESSION)
