"""Smoke: the cluster runs the passthrough pipeline end to end and every input id arrives exactly once."""

import pytest

from harness.run.session import scenario

pytestmark = pytest.mark.smoke


def test_passthrough_delivers_every_id_exactly_once(cluster, stall_timeout: float) -> None:
    result = scenario(cluster, "smoke", sink="builtin_kafka", records=20_000, partitions=4,
                      stall_timeout=stall_timeout).run()

    assert result.sends.acked == 20_000
    assert result.batches_committed, "no batch was committed: the pipeline never ran"
    assert result.outcome == "pass", result.summary()
    assert result.verdict.distinct == 20_000 and result.verdict.observed == 20_000
