"""The certificate of a sink matrix run under pytest (`pytest -m chaos --sink ...`): the same
certificate.json, junit.xml and index.html as `certify` writes (harness.certify.certificate), from the
rows its tests ran, in whichever pytest-xdist worker. Each row's test records its outcome (and the
baseline what it showed) as properties of its report; the session's controller gathers them at the end,
so the verdict's words ("certified", or what was not tried) are certify's own."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.certify.certificate import write_certificate
from harness.certify.certification import shipped_dependencies
from harness.certify.matrix import BASELINE, MatrixScenario
from harness.certify.rows import MatrixRun, Row, sink_and_pipeline
from harness.faults.space import Observation
from harness.run.scenario_result import ScenarioResult

ROW = "eo_row"  # a sink matrix test's property: its row's outcome, as the certificate lists it
OBSERVED = "eo_observed"  # the baseline's property: what it showed (the space the certificate accounts for)


def row_properties(row: MatrixScenario, result: ScenarioResult, seconds: float) -> list[tuple[str, str]]:
    """What a row's test records for the certificate."""
    anomalies = {name: a.count for name, a in result.verdict.anomalies.items()}
    judgement = result.judgement
    why = ("; ".join(judgement.reasons) if judgement else "") or result.verdict.error
    entry = {"name": row.name, "faults": list(row.faults), "outcome": result.outcome, "anomalies": anomalies,
             "seconds": seconds, "report": str(Path(result.report_dir or ".") / "index.html"), "error": why,
             "phases": result.phases}
    found = [(ROW, json.dumps(entry))]
    if row.name == BASELINE.name:
        found.append((OBSERVED, json.dumps(result.observation.to_dict())))
    return found


def write_from_properties(properties: Iterable[tuple[str, str]], folder: Path, run: MatrixRun) -> dict[str, Any] | None:
    """The certificate of the rows the properties name (None when the baseline did not run: no space to
    account for), written into `folder`; reports linked relative to it."""
    entries, seen = [], None
    for name, value in properties:
        if name == ROW:
            entries.append(json.loads(value))
        elif name == OBSERVED:
            seen = Observation.from_dict(json.loads(value))
    if seen is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    entries.sort(key=lambda e: (e["name"] != BASELINE.name, e["name"]))
    done = [Row(MatrixScenario(e["name"], tuple(e["faults"])), e["outcome"], e["anomalies"], e["seconds"],
                os.path.relpath(e["report"], folder), e["error"], e["phases"]) for e in entries]
    sink, pipeline = sink_and_pipeline(run)  # a Flink job and the pipeline it names, or the sink and --pipeline
    return write_certificate(folder, sink, pipeline, seen, False, run.seed, done, run.restarts, store=run.store,
                             dependencies=shipped_dependencies(run), engine=run.engine)
