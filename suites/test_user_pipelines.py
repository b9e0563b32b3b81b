"""Users' pipelines as they are: their own input schema and workload, no model. The differential
oracle judges each scenario against fault-free runs of the same pipeline (which must agree first):
the reference sink passes through a driver kill, Spark's built-in sink is caught repeating output,
and a pipeline whose fault-free runs differ is reported as nondeterministic, never certified."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import BadInput
from harness.run.reference import Nondeterministic
from harness.run.scenario_result import ScenarioResult
from harness.run.session import scenario

pytestmark = pytest.mark.chaos
USER_PIPELINES = Path(__file__).resolve().parents[1] / "fixtures" / "user_pipelines"
TXN = "transactional"
BUILTIN = "builtin_kafka"
RECORDS, SEED = 10_000, 3


def run(cluster, name: str, pipeline: str, sink: str, spec: str) -> ScenarioResult:  # type: ignore[no-untyped-def]
    result = scenario(cluster, name, pipeline=str(USER_PIPELINES / pipeline), sink=sink, faults=[spec],
                      records=RECORDS, seed=SEED).run()
    assert spec in {e["fault"] for e in result.events("effect")}, "fault never fired with an effect"
    assert result.verdict.oracle == "differential", result.verdict.summary()
    return result


@pytest.mark.parametrize(("pipeline", "builtin_guarantee"), [
    pytest.param("orders.py", "at-least-once", id="append"),
    pytest.param("customer_totals.py", "effectively-once", id="update"),  # identical repeats of final rows
])
def test_a_pipeline_without_a_model_passes_with_the_reference_sink_and_is_caught_with_the_builtin_one(
        cluster, pipeline: str, builtin_guarantee: str) -> None:
    stem = pipeline.removesuffix(".py").replace("_", "-")
    good = run(cluster, f"{stem}-txn-kill-driver", pipeline, TXN, "kill:driver@txn.pre_commit#2")
    assert good.verdict.outcome == "pass", good.verdict.summary()
    references = sorted(p.name for p in good.report_dir.parent.glob(f"reference-{stem}-*"))
    assert references == [f"reference-{stem}-1", f"reference-{stem}-2"], references

    bad = run(cluster, f"{stem}-builtin-kill-driver", pipeline, BUILTIN, "kill:driver@produce#3")
    assert bad.verdict.outcome == "fail" and set(bad.verdict.anomalies) == {"duplicate"}, bad.verdict.summary()
    assert bad.verdict.guarantee == builtin_guarantee


def test_a_nondeterministic_pipeline_is_named_and_never_certified(cluster) -> None:
    with pytest.raises(Nondeterministic) as raised:
        scenario(cluster, "noise-txn", pipeline=str(USER_PIPELINES / "orders_with_noise.py"), sink=TXN,
                 records=RECORDS, seed=SEED).run()
    assert raised.value.exit_status == 2
    assert "nondeterministic" in str(raised.value) and '"score' in str(raised.value), raised.value


def test_a_transform_that_raises_in_the_driver_is_bad_input(cluster, tmp_path: Path) -> None:
    broken = tmp_path / "broken_pipeline.py"
    broken.write_text("def transform(source):\n    return source.select('no_such_column')\n"
                      "def model(inputs):\n    return {}\ndef identity(value):\n    return ''\n")
    with pytest.raises(BadInput) as raised:
        scenario(cluster, "broken-transform", pipeline=str(broken), sink=TXN, records=100).run()
    assert "transform raised AnalysisException" in str(raised.value) and "no_such_column" in str(raised.value)


@pytest.mark.gate
def test_a_sink_that_imports_what_the_image_lacks_when_a_batch_runs_is_bad_input(cluster, tmp_path: Path) -> None:
    """The import is inside foreachBatch, so the driver loads the sink and the query starts; its first batch
    fails. No restart, no crash loop charged to the sink: bad input naming the module and the image's
    packages."""
    lacking = tmp_path / "lacking_sink.py"
    lacking.write_text("def write(frame, batch_id):\n    import mysql.connector  # noqa: F401\n\n\n"
                       "def sink(frame, context):\n    return frame.writeStream.foreachBatch(write)\n")
    with pytest.raises(BadInput) as raised:
        scenario(cluster, "lacking-module", pipeline="passthrough", sink=f"{lacking}:sink", records=100).run()
    assert raised.value.exit_status == 2
    assert "No module named 'mysql'" in str(raised.value) and "psycopg2-binary" in str(raised.value), raised.value
