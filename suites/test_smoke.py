"""Smoke: the cluster runs the passthrough pipeline end to end and every input id arrives exactly once."""

import pytest

from harness.scenario import Scenario
from harness.workload import Workload

pytestmark = pytest.mark.smoke


def test_passthrough_delivers_every_id_exactly_once(cluster, stall_timeout: float) -> None:
    result = Scenario(cluster, "smoke", workload=Workload(20_000), partitions=4, stall_timeout=stall_timeout).run()

    assert result.sends.acked == 20_000
    assert result.batches_committed, "no batch was committed: the pipeline never ran"
    assert result.verdict.outcome == "pass", result.verdict.summary()
    assert result.verdict.distinct == 20_000 and result.verdict.observed == 20_000
