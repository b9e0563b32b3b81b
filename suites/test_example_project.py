"""The example project kept as data teams keep theirs (examples/orders_lake: a src/ layout, a sink that
imports a helper module, a third-party package and a class from a jar, and needs a Spark setting of its
own; a `cluster` fixture of its own) run as its users run it: pytest in its folder, the harness's plugin
found by its entry point, what ships with the sink named in its pyproject.toml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "orders_lake"


def _pytest(project: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """pytest in the project's folder, with none of this repository's settings or path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_") and k != "PYTHONPATH"}
    env["HARNESS_REPORTS"] = str(project / "reports")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=project,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "orders_lake"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("reports", "__pycache__"))
    return copy


@pytest.mark.gate
def test_a_plain_pytest_runs_the_unit_tests_and_starts_no_cluster(project: Path) -> None:
    done = _pytest(project, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed, 1 skipped" in done.stdout, done.stdout[-3000:]
    assert not (project / "reports").exists(), "a plain pytest started a scenario"


@pytest.mark.gate
def test_its_chaos_test_ships_the_package_jar_and_setting_and_passes(project: Path) -> None:
    done = _pytest(project, "-m", "chaos", timeout=1500)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout, done.stdout[-3000:]
