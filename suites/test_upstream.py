"""Bugs reproduced in released components, each a test that names the public issue and the versions, and
asserts the anomaly the issue reports: it fails on the day a fixed release is used, which is the point.

apache/paimon#9666 (open; fix PRs #9667 and #10105 open): Paimon's Spark streaming sink commits a replayed
micro-batch a second time when the driver dies after the table commit and before Spark's commit log.
Run here against `paimon-spark-3.5` 0.9.0 (harness.output.paimon), Spark 3.5: the driver is killed once
batch 2 is a Paimon snapshot and not yet in Spark's commit log, and the table's snapshots are read."""

from __future__ import annotations

import pytest

from harness.output.paimon import RELEASES
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
