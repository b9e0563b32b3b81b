"""The harness as users install it: a wheel built from this repository, installed into a fresh venv
outside the checkout (next to PyPI's `fixtures` package), runs the example project's `eo_scenario`
test and the baseline of its sink's matrix with `pytest -m chaos`, and `certify --dry-run`, from the
example's folder, with no conftest.py and nothing from the repository on its path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "payments"


def run(command: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """A command with the repository off the Python path; its output is shown when it fails."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_REPORTS", "HARNESS_SINK")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}\n{done.stdout[-6000:]}\n" \
                                 f"{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv's bin folder, a copy of the example project), the wheel installed into the venv."""
    work = tmp_path_factory.mktemp("package")
    source = work / "source"  # a copy: a build/ folder left in the checkout must not leak into the wheel
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", "build", "reports", "*.egg-info", ".*cache",
                                                                 ".hypothesis", "__pycache__", ".venv", "site"))
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(source)], work, 600)
    wheel = next((work / "dist").glob("eo_harness-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "harness/images/kafka/Dockerfile" in names and "harness/catalog/sinks/transactional.py" in names
    assert not [n for n in names if n.startswith("fixtures/")], "no top-level fixtures package"
    venv.create(work / "venv", with_pip=True)
    bin_dir = work / "venv" / "bin"
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel), "fixtures"], work, 900)
    run([str(bin_dir / "python"), "-c", "import fixtures, harness.catalog; import fixtures.fixture"], work, 60)
    project = work / "payments"
    shutil.copytree(EXAMPLE, project)
    return bin_dir, project


def test_the_example_project_runs_its_chaos_test_and_its_sinks_baseline(installed: tuple[Path, Path]) -> None:
    bin_dir, project = installed
    done = run([str(bin_dir / "pytest"), "-m", "chaos", "--sink", "sinks/payments_sink.py:sink", "--brokers", "1",
                "-k", "payments_survive or baseline and not live", "-p", "no:cacheprovider"], project, 1800)
    assert "2 passed" in done.stdout, done.stdout[-3000:]
    assert "DeprecationWarning" not in done.stdout + done.stderr and " warning" not in done.stdout, \
        "a dependency's warnings reach the user's run: " + done.stdout[-3000:]
    reports = list((project / "reports").glob("*/test_payments_survive_a_driver_kill_at_commit/result.json"))
    assert reports, "the eo_scenario report is named after the test id, under ./reports"


def test_certify_dry_run_prints_the_rows_it_would_run(installed: tuple[Path, Path]) -> None:
    bin_dir, project = installed
    done = run([str(bin_dir / "eo-harness"), "certify", "--sink", "sinks/payments_sink.py:sink", "--quick",
                "--dry-run"], project, 120)
    assert "baseline" in done.stdout and "kill-sender-txn.commit" in done.stdout
