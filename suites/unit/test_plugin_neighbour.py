"""The plugin is a good neighbour in a user's own test suite: its fixtures are named for the harness, so a
project's `cluster` fixture is its own, and a failing test that uses it gets no error of the plugin's; a
plain `pytest` starts no cluster (its chaos tests are skipped, saying how to run them) and leaves the
environment and the signal handlers of a run without them as they were."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CONFTEST = '''
import pytest


@pytest.fixture
def cluster():
    return {"name": "the project's own"}
'''
TESTS = '''
import os
import signal

import pytest


def test_the_plugin_left_the_environment_and_the_signals_alone():
    assert not [name for name in os.environ if name.startswith("HARNESS_")]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.chaos
def test_a_chaos_test(eo_scenario):
    raise AssertionError("a plain pytest run started a chaos test")


def test_its_own_cluster(cluster):
    assert cluster == {"name": "the project's own"}


def test_a_failure_of_its_own(cluster):
    assert cluster["name"] == "another"
'''


def test_a_project_s_own_cluster_fixture_is_its_own_and_its_failures_its_own(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_project.py").write_text(TESTS)
    environment = {name: value for name, value in os.environ.items() if not name.startswith("HARNESS_")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, env=environment)
    # an error of the plugin's would read ", 1 error in"; the chaos test is skipped, saying how to run it
    assert "1 failed, 2 passed, 1 skipped in" in ran.stdout, ran.stdout[-2000:]
    assert "AttributeError" not in ran.stdout
    reasons = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-k", "chaos",
                              str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                             env=environment).stdout
    assert "a chaos test starts clusters: run it with -m chaos" in reasons, reasons[-1000:]
