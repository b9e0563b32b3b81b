"""The run index: one row per scenario; a pytest-xdist session's index spans its workers' runs."""

import json
from pathlib import Path

import pytest

from harness.report import write_index

pytestmark = pytest.mark.unit


def scenario(run: Path, name: str, outcome: str = "pass", engine: str | None = None) -> None:
    (run / name).mkdir(parents=True)
    verdict = {"outcome": outcome, "guarantee": "exactly-once", "anomalies": {}}
    (run / name / "result.json").write_text(json.dumps({"verdict": verdict, "versions": {"kafka": "4.1.1"}}))
    if engine:
        (run / "run.json").write_text(json.dumps({"run": run.name, "engine": engine}))


def test_a_run_lists_its_scenarios(tmp_path: Path) -> None:
    scenario(tmp_path / "run", "baseline")
    scenario(tmp_path / "run", "kill", "fail")
    page = write_index(tmp_path / "run").read_text()
    assert "href='baseline/index.html'" in page and "href='kill/index.html'" in page
    assert "class='fail'" in page and "kafka 4.1.1" in page


def test_a_session_of_workers_lists_every_workers_scenarios_and_engines(tmp_path: Path) -> None:
    scenario(tmp_path / "s-gw0", "test_a", engine="unix:///var/run/docker.sock")
    scenario(tmp_path / "s-gw1", "test_b", engine="unix:///run/second.sock")
    page = write_index(tmp_path / "s", [tmp_path / "s-gw0", tmp_path / "s-gw1"]).read_text()
    assert "href='../s-gw0/test_a/index.html'" in page and "href='../s-gw1/test_b/index.html'" in page
    assert "s-gw0: engine unix:///var/run/docker.sock" in page and "s-gw1: engine unix:///run/second.sock" in page
