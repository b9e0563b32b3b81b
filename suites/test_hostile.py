"""Hostile sinks in otherwise correct ones (fixtures/user_sinks/hostile_*.py, and the `hostile_sink` of
iceberg_create_with_first_batch.py). The transactional one, from inside Spark, tries to re-enable
toxiproxy's links, reach a broker past the gate and the relay's own service, open a raw socket, rename its
driver process (as a sink would to mislead a lookup of a sender by name), write a name of its own into
Spark's commit log, and print Spark's line of a speculative copy: each attack must fail or change nothing,
the sender still found and killed holding its commit, and the run judged as the reference's. The Delta one
undoes the harness's hold at each table commit (it shares the JVM's process) and hides Spark's commit log:
its row passes only where the fault still landed before Spark's commit. The Iceberg one on object storage
floods the gate's HTTP routes with empty lines and writes markup where the harness shows what a sink
wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run.session import scenario
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "user_sinks" / "hostile_transactional.py"
KILL = "kill:sender@txn.commit#2"
RECORDS = 3000  # three batches
BLOCKED = ("undo_a_partition", "reach_a_broker_directly", "reach_the_relay_s_service", "open_a_raw_socket")


@pytest.mark.gate
def test_a_hostile_sink_s_attacks_fail_and_its_run_is_judged_as_the_reference_s(cluster) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cluster, "hostile-kill-sender-txn-commit", sink=f"{HOSTILE}:sink", faults=[KILL],
                      records=RECORDS).run()

    assert result.report_dir is not None
    said = {line.split()[1]: line.split(" ", 2)[2]
            for log in (result.report_dir / "logs").glob("driver-*.log")
            for line in log.read_text().splitlines() if line.startswith("HOSTILE ")}
    assert set(said) >= {*BLOCKED, "rename_the_process", "write_the_checkpoint_s_commit_log",
                         "print_spark_s_lines"}, said
    assert all(said[attack].startswith("failed") for attack in BLOCKED), said
    assert not result.events("speculation"), "a line the sink printed taken for Spark's speculative copy"
    assert_fired_with_effect(result, KILL)
    assert result.exactly_once, result.summary()


HOSTILE_TABLE = HOSTILE.parent / "hostile_delta.py"
AT_TABLE_COMMIT = "kill:driver@table.committed:2"


@pytest.mark.gate
def test_a_sink_that_undoes_the_hold_at_its_table_commit_never_passes_unearned(cluster) -> None:  # type: ignore[no-untyped-def]
    """The sink lets its JVM go on the moment the harness holds it at a table commit, and hides each file of
    Spark's commit log for a second; its answers to the hold and its kill of the hold process fail (root's).
    What the hold was for must still hold, or the row must not pass: a pass only with the driver killed
    before Spark committed batch 2 (Delta's own work after its commit takes longer than the harness's kill,
    so it often is); otherwise the point came too late (the fault `vacuous`) or the fault after Spark's
    commit, which the hold wrote down as it appeared however the sink hid it (`point.missed`: ineffective)."""
    result = scenario(cluster, "hostile-delta-kill-driver-table-committed", sink=f"{HOSTILE_TABLE}:sink",
                      faults=[AT_TABLE_COMMIT], records=RECORDS, output="delta").run()

    assert result.report_dir is not None
    lines = [line for log in (result.report_dir / "logs").glob("driver-*.log")
             for line in log.read_text().splitlines() if line.startswith("HOSTILE ")]
    assert any(line.startswith("HOSTILE resume_the_held_jvm") for line in lines), "the sink never found its JVM held"
    for attack in ("answer_the_hold", "kill_the_hold"):
        outcomes = [line.split(" ", 2)[2] for line in lines if line.split()[1] == attack]
        assert outcomes and all(o.startswith("failed: PermissionError") for o in outcomes), (attack, outcomes)
    assert any(line.startswith("HOSTILE hide_the_commit") and line.endswith("done") for line in lines), lines
    assert result.judgement is not None
    missed = result.events("point.missed")
    if result.outcome == "pass":
        assert not missed
        assert_fired_with_effect(result, AT_TABLE_COMMIT)
        killed = next(e["t"] for e in result.events("effect") if e["fault"] == AT_TABLE_COMMIT)
        committed_2 = [e["t"] for e in result.events("batch.committed") if e["batch"] == 2]
        assert committed_2 and committed_2[0] > killed, "a pass with Spark's commit of batch 2 before the kill"
    else:
        assert missed or "vacuous" in result.judgement.verdict.anomalies, result.summary()


HOSTILE_PROCESSES = HOSTILE.parent / "hostile_processes.py"


def hostile_lines(result, attack: str) -> list[str]:  # type: ignore[no-untyped-def]
    """What the sink said of one attack, a line per container it ran in (`<where> <result>`)."""
    assert result.report_dir is not None
    prefix = f"HOSTILE {attack} "
    return [line.removeprefix(prefix) for log in (result.report_dir / "logs").glob("driver-*.log")
            for line in log.read_text().splitlines() if line.startswith(prefix)]


@pytest.mark.gate
def test_a_known_bad_sink_that_replaces_kill_and_ps_and_leaves_decoys_is_still_caught(cluster) -> None:  # type: ignore[no-untyped-def]
    """Spark runs as its own user in containers whose image is read-only: the tools the harness runs there
    are root's and the image's, and the sink's attempt to replace them fails in the driver and in every
    executor; the fault still kills the sender holding its commit, and the known-bad sink is caught as
    without the attack. Decoys orphaned in every executor's container, named as executor JVMs, are left
    alone: the executor killed is the Worker's own child, so Spark launches a new one (the recovery)."""
    kill, executor = "kill:sender@txn.commit", "kill:executor@batch.planned:2"
    result = scenario(cluster, "hostile-processes-kill-sender-and-executor", sink=f"{HOSTILE_PROCESSES}:sink",
                      faults=[kill, executor], records=RECORDS).run()

    replaced = hostile_lines(result, "replace_the_tools")
    assert len({line.split()[0] for line in replaced}) >= 2, replaced  # the driver's container and a worker's
    assert all(line.split(" ", 1)[1].startswith("failed") for line in replaced), replaced
    assert all("Read-only file system" in line for line in replaced), replaced  # the image, whoever writes
    assert_fired_with_effect(result, kill)
    assert "duplicate" in result.verdict.anomalies, result.summary()
    explained = [e for e in result.verdict.anomalies["duplicate"].examples if "explanation" in e]
    assert explained, f"no duplicate explained from the broker's log: {result.summary()}"
    for worker in cluster.workers:  # not even root: the harness's own commands there cannot change the image
        status, said = worker.output(["sh", "-c", "touch /usr/bin/kill"])
        assert status != 0 and "Read-only file system" in said, (worker.alias, status, said)
    assert any(line.endswith(" left") for line in hostile_lines(result, "leave_a_decoy"))
    assert_fired_with_effect(result, executor)
    recoveries = [e["detail"] for e in result.events("recovery") if e["fault"] == executor]
    assert recoveries and recoveries[0].startswith("new executor process"), recoveries


IDEMPOTENT_APPEND = HOSTILE.parent / "iceberg_create_with_first_batch.py"


@pytest.mark.gate
def test_a_sink_that_floods_the_gate_s_http_routes_and_writes_markup_is_judged_as_without_them(cluster) -> None:  # type: ignore[no-untyped-def]
    """10 MiB of empty lines on a connection to the S3 server and to the REST catalog: the gate closes each
    once its bound of empty lines is passed (`gate.frame_refused`), and the sink's own requests go on through
    it. Markup as the commits' `spark.app.id` and in the failure the lost answer causes: in the history as
    written, escaped in every page. Under a lost commit answer and a driver killed at a held commit, the
    run is judged as the sink's without its attacks (test_object_store.py): exactly-once."""
    from fixtures.user_sinks.iceberg_create_with_first_batch import MARKUP

    drop, kill = "drop:sender@catalog.commit#2", "kill:driver@table.committed:2"
    result = scenario(cluster, "hostile-iceberg-s3-drop-then-kill-driver", sink=f"{IDEMPOTENT_APPEND}:hostile_sink",
                      output="iceberg", store="s3", faults=[drop, kill], records=RECORDS).run()

    floods = hostile_lines(result, "flood_with_empty_lines")
    assert {line.split()[0] for line in floods} == {"s3", "catalog"}, floods
    assert all(" closed by the gate " in line for line in floods), floods
    refused = [e for e in result.events("gate.frame_refused") if "empty lines" in e["why"]]
    assert len(refused) >= 2 and all(e["role"] == "driver" for e in refused), refused
    assert_fired_with_effect(result, drop, kill)
    assert result.events("query.failed"), "the lost answer did not fail the write"
    point = [e for e in result.events("table.committed") if e["point"] and e["batch"] == 2]
    assert point and point[0]["held"], result.events("table.committed")
    assert result.exactly_once, result.summary()
    assert result.report_dir is not None
    written = (result.report_dir / "history.jsonl").read_text()
    assert written.count(MARKUP) >= 2, "the markup never reached the history: nothing to escape"
    pages = [p for p in result.report_dir.rglob("*") if p.suffix in (".html", ".svg")]
    assert pages and not [p.name for p in pages if MARKUP in p.read_text()], pages


HOSTILE_BOMB = HOSTILE.parent / "hostile_delta_bomb.py"


@pytest.mark.gate
def test_a_sink_that_commits_a_decompression_bomb_fails_as_a_corrupt_table_naming_it(cluster) -> None:  # type: ignore[no-untyped-def]
    """An idempotent Delta sink that commits, after its first batch, 443 bytes of Parquet that decode to
    1.25 GiB: the harness refuses the file undecoded and the run fails as `table_corrupt` with the file and
    the bound named, and the bomb's version, committed while Spark ran batch 0, is that batch's second
    commit (`batch_committed_twice`); the fault at batch 2 still fires with its effect."""
    from fixtures.user_sinks.hostile_delta_bomb import BOMB

    result = scenario(cluster, "hostile-delta-bomb-kill-driver-table-committed", sink=f"{HOSTILE_BOMB}:sink",
                      faults=[AT_TABLE_COMMIT], records=RECORDS, output="delta").run()

    assert [line for line in hostile_lines(result, "commit_a_parquet_bomb") if line.startswith("version ")]
    assert_fired_with_effect(result, AT_TABLE_COMMIT)
    assert result.outcome == "fail", result.summary()
    assert set(result.verdict.anomalies) == {"table_corrupt", "batch_committed_twice"}, result.summary()
    example = result.verdict.anomalies["table_corrupt"].examples[0]
    assert example["missing"].endswith(f"/{BOMB}") and "decode to more than" in example["error"], example
    twice = result.verdict.anomalies["batch_committed_twice"].examples[0]  # the bomb's own version, in batch 0
    assert twice["batch"] == 0 and len(twice["versions"]) == 2, twice
