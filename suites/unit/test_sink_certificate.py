"""`pytest --sink` writes the certificate `certify` writes, from the rows its tests recorded in any worker,
and says "certified" only when every applicable class was tried and passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.certify.recorded import OBSERVED, ROW, write_from_properties
from harness.certify.rows import MatrixRun
from harness.faults.space import TRANSACTIONAL, Observation, space
from harness.settings import FLINK

pytestmark = pytest.mark.unit


def _row(name: str, faults: list[str], report: Path, outcome: str = "pass") -> tuple[str, str]:
    return ROW, json.dumps({"name": name, "faults": faults, "outcome": outcome, "anomalies": {}, "seconds": 30.0,
                            "report": str(report / name / "index.html"), "error": "", "phases": {}})


def test_the_rows_recorded_make_certifys_certificate(tmp_path: Path) -> None:
    seen = Observation.assumed(TRANSACTIONAL, False)
    worker = tmp_path / "reports" / "session-gw1"
    recorded = [_row("baseline", [], worker), (OBSERVED, json.dumps(seen.to_dict())),
                _row("kill-sender-txn.commit", ["kill:sender@txn.commit"], worker)]
    folder = tmp_path / "reports" / "session" / "certificate"
    certificate = write_from_properties(recorded, folder, MatrixRun("transactional", pipeline="passthrough"))
    assert certificate is not None and not certificate["certified"]
    untried = len(space(seen)) - 1
    assert certificate["verdict"].startswith("not certified") and f"{untried} not tried" in certificate["verdict"]
    assert [s["name"] for s in certificate["scenarios"]] == ["baseline", "kill-sender-txn.commit"]
    assert certificate["scenarios"][0]["report"] == "../../session-gw1/baseline/index.html"
    written = json.loads((folder / "certificate.json").read_text())
    assert written["verdict"] == certificate["verdict"] and (folder / "index.html").is_file()
    assert written["dependencies"]["python"] == [] and written["dependencies"]["conf"] == {}


def test_without_a_baseline_there_is_no_certificate(tmp_path: Path) -> None:
    assert write_from_properties([_row("kill-sender-txn.commit", [], tmp_path)], tmp_path / "c",
                                 MatrixRun("transactional", pipeline="passthrough")) is None


def test_a_flink_job_s_rows_make_a_certificate_naming_the_job_its_pipeline_and_the_engine(tmp_path: Path) -> None:
    seen = Observation.assumed(TRANSACTIONAL, False)
    recorded = [_row("baseline", [], tmp_path), (OBSERVED, json.dumps(seen.to_dict()))]
    certificate = write_from_properties(recorded, tmp_path / "c",
                                        MatrixRun("running_totals_exactly_once", engine=FLINK))
    assert certificate is not None
    assert (certificate["engine"], certificate["sink"], certificate["pipeline"]) == (
        FLINK, "running_totals_exactly_once", "running_totals")
