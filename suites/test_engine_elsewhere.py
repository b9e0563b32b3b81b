"""A scenario on an engine that is really elsewhere (suites/conftest.py's far_engine: reachable only over
TCP with TLS): the system under test meets the gate in the relay, a checkpoint trigger is read through it, the
report comes back to this host, and nothing is left on that engine afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster.labels import RUN

pytestmark = pytest.mark.integration


def test_a_sink_that_skips_its_marker_check_is_caught_on_an_engine_elsewhere(far_engine: dict[str, str], far_client,
                                                                          tmp_path: Path) -> None:
    environment = {**os.environ, **far_engine, "HARNESS_REPORTS": str(tmp_path)}
    faults = ["kill:executor@batch.planned:1", "kill:driver@txn.pre_commit#3"]  # a checkpoint trigger, a gate point
    finished = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--sink", "bad_no_marker_check", "--records", "6000",
         "--name", "elsewhere", *[arg for fault in faults for arg in ("--fault", fault)]],
        env=environment, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 1, finished.stdout[-3000:] + finished.stderr[-3000:]  # 1: anomalies found

    (report,) = tmp_path.glob("*/elsewhere")
    anomalies = json.loads((report / "result.json").read_text())["verdict"]["anomalies"]
    assert "duplicate" in anomalies and "vacuous" not in anomalies, anomalies
    history = [json.loads(line) for line in (report / "history.jsonl").read_text().splitlines()]
    assert {e["step"] for e in history if e["type"] == "trigger"} == set(faults)
    assert any(e["type"] == "batch.committed" for e in history), "checkpoint progress was read through the relay"
    assert (report / "logs").is_dir() and any((report / "logs").iterdir()), "container logs came back"

    far = far_client
    run_id = report.parent.name
    left = [c.name for c in far.containers.list(all=True, filters={"label": f"{RUN}={run_id}"})]
    left += [v.name for v in far.volumes.list(filters={"label": f"{RUN}={run_id}"})]
    assert not left, f"left on the engine: {left}"
