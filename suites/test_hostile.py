"""A hostile sink in an otherwise correct one (fixtures/user_sinks/hostile_transactional.py): from inside
Spark it tries to re-enable toxiproxy's links, reach a broker past the gate and the relay's own service,
open a raw socket, rename its driver process (as a sink would to mislead a lookup of a sender by name),
and write a name of its own into Spark's commit log. Each attack must fail or change nothing: the sender
is still found and killed holding its commit, and the run is judged as the reference's, exactly-once."""

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
