"""The matrix spread over two Docker engines with pytest-xdist: worker i runs its own cluster on engine i,
the session's index page lists every worker's scenarios, and nothing is left on either engine.

The second engine is started here (`harness engine start`); its images are built into it on first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from harness.cluster import engines
from harness.cluster.engine import engine_socket_url
from harness.cluster.labels import RUN

pytestmark = pytest.mark.chaos

USER_TESTS = '''
import pytest

pytestmark = pytest.mark.chaos


@pytest.mark.parametrize("seed", [1, 2])
def test_reference_sink(eo_scenario, seed):
    result = eo_scenario(sink="transactional", faults=["kill:sender@txn.commit"], records=4_000, seed=seed)
    assert result.exactly_once, result.summary()
'''


def test_two_workers_run_on_two_engines(tmp_path: Path) -> None:
    first, second = engine_socket_url(), engines.start("second", pool=1)
    try:
        (tmp_path / "test_spread.py").write_text(USER_TESTS)
        reports = tmp_path / "reports"
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-m", "chaos",
             "--docker-hosts", f"{first},{second}", "--reports", str(reports), "--junitxml", "junit.xml",
             "test_spread.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=1800,
            env={k: v for k, v in os.environ.items() if k != "DOCKER_HOST"},
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "2 passed" in run.stdout, run.stdout[-2000:]

        workers = sorted(p for p in reports.iterdir() if "-gw" in p.name)
        assert {json.loads((p / "run.json").read_text())["engine"] for p in workers} == {first, second}
        for worker in workers:
            assert list(worker.glob("*/result.json")), f"{worker.name} ran no scenario"
        merged = reports / workers[0].name.rsplit("-gw", 1)[0] / "index.html"
        page = merged.read_text()
        assert page.count("/index.html'>test_reference_sink") == 2 and first in page and second in page
        assert (tmp_path / "junit.xml").read_text().count("<testcase") == 2
        for engine in (first, second):
            client = docker.DockerClient(base_url=engine)
            for worker in workers:
                left = client.containers.list(all=True, filters={"label": f"{RUN}={worker.name}"})
                assert not left, f"left on {engine}: {[c.name for c in left]}"
    finally:
        engines.stop("second")
