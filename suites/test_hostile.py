"""Hostile sinks in otherwise correct ones (fixtures/user_sinks/hostile_*.py). The transactional one, from
inside Spark, tries to re-enable toxiproxy's links, reach a broker past the gate and the relay's own
service, open a raw socket, rename its driver process (as a sink would to mislead a lookup of a sender by
name), and write a name of its own into Spark's commit log: each attack must fail or change nothing, the
sender still found and killed holding its commit, and the run judged as the reference's. The Delta one
undoes the harness's hold at each table commit (it shares the JVM's process): its row passes only where
the fault still landed before Spark's commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run.session import scenario
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "user_sinks" / "hostile_transactional.py"
KILL = "kill:sender@txn.commit#2"
BLOCKED = ("undo_a_partition", "reach_a_broker_directly", "reach_the_relay_s_service", "open_a_raw_socket")


@pytest.mark.gate
def test_a_hostile_sink_s_attacks_fail_and_its_run_is_judged_as_the_reference_s(cluster) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cluster, "hostile-kill-sender-txn-commit", sink=f"{HOSTILE}:sink", faults=[KILL],
                      records=4000).run()

    assert result.report_dir is not None
    said = {line.split()[1]: line.split(" ", 2)[2]
            for log in (result.report_dir / "logs").glob("driver-*.log")
            for line in log.read_text().splitlines() if line.startswith("HOSTILE ")}
    assert set(said) >= {*BLOCKED, "rename_the_process", "write_the_checkpoint_s_commit_log"}, said
    assert all(said[attack].startswith("failed") for attack in BLOCKED), said
    assert_fired_with_effect(result, KILL)
    assert result.exactly_once, result.summary()


HOSTILE_TABLE = HOSTILE.parent / "hostile_delta.py"
AT_TABLE_COMMIT = "kill:driver@table.committed:2"


@pytest.mark.gate
def test_a_sink_that_undoes_the_hold_at_its_table_commit_never_passes_unearned(cluster) -> None:  # type: ignore[no-untyped-def]
    """The sink lets its JVM go on the moment the harness holds it at a table commit. What the hold was
    for must still hold, or the row must not pass: a pass only with the driver killed before Spark
    committed batch 2 (Delta's own work after its commit takes longer than the harness's kill, so it
    often is); otherwise the point came too late (the fault `vacuous`) or the fault after Spark's commit
    (`point.missed`: ineffective)."""
    result = scenario(cluster, "hostile-delta-kill-driver-table-committed", sink=f"{HOSTILE_TABLE}:sink",
                      faults=[AT_TABLE_COMMIT], records=4000, output="delta").run()

    assert result.report_dir is not None
    resumed = [line for log in (result.report_dir / "logs").glob("driver-*.log")
               for line in log.read_text().splitlines() if line.startswith("HOSTILE resume_the_held_jvm")]
    assert resumed, "the sink never found its JVM held"
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
