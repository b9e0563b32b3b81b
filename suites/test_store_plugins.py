"""A store installed from a package of its own (examples/files_store: Spark's file sink, its folder read as
its `_spark_metadata` log commits it) is an `--output` choice found through its entry point, and runs a
scenario as the harness's own stores do, its commits held and seen at the table commit point. Nothing in
the harness names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run.session import scenario
from suites.test_faults import assert_fired_with_effect

pytestmark = pytest.mark.chaos
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "files_store"
SINK = f"{EXAMPLE / 'sinks' / 'parquet_sink.py'}:sink"
RECORDS = 3000  # three batches


@pytest.mark.gate
def test_a_store_from_its_own_package_runs_a_baseline_its_commits_seen_at_the_table_commit(cluster) -> None:  # type: ignore[no-untyped-def]
    result = scenario(cluster, "files-baseline", sink=SINK, output="files", records=RECORDS).run()

    assert result.exactly_once, result.summary()
    assert len(result.read.records) == RECORDS
    seen = {e["batch"] for e in result.events("table.committed")}
    assert seen and seen == set(result.batches_committed), (seen, result.batches_committed)


def test_spark_s_file_sink_is_exactly_once_when_the_driver_dies_at_its_log_s_commit(cluster) -> None:  # type: ignore[no-untyped-def]
    fault = "kill:driver@table.committed:1"
    result = scenario(cluster, "files-kill", sink=SINK, output="files", faults=[fault], records=RECORDS).run()

    assert_fired_with_effect(result, fault)
    assert result.exactly_once, result.summary()
