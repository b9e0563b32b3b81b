"""benchmarks/detect.py runs each known-bad table sink against the output it writes, with the pipeline it
is caught with: a state table's sink with a pipeline of one final result a key."""

from __future__ import annotations

import pytest

from harness.subject.code_spec import catalog, resolve_sink

pytestmark = pytest.mark.unit


def test_every_known_bad_table_sink_runs_against_its_output_with_its_pipeline(benchmark_script) -> None:  # type: ignore[no-untyped-def]
    bench = benchmark_script("detect")
    tables = {name: resolve_sink(name).output for name in catalog("sink") if name.startswith("bad_")}
    tables = {name: output for name, output in tables.items() if output is not None}
    assert {name: bench.TABLE_SINKS[name][0] for name in tables} == tables
    merge = bench.Subject("sink", "bad_delta_merge_adds_twice").run(100, rate=0.0)
    assert (merge.output, merge.pipeline) == ("delta", "running_totals")
    kafka = bench.Subject("sink", "bad_no_marker_check").run(100, rate=0.0)
    assert (kafka.output, kafka.pipeline) == ("kafka", "passthrough")
