"""The plugin is a good neighbour in a user's own test suite: its fixtures are named for the harness, so a
project's `cluster` fixture is its own, and a failing test that uses it gets no error of the plugin's."""

from __future__ import annotations

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
def test_its_own_cluster(cluster):
    assert cluster == {"name": "the project's own"}


def test_a_failure_of_its_own(cluster):
    assert cluster["name"] == "another"
'''


def test_a_project_s_own_cluster_fixture_is_its_own_and_its_failures_its_own(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_project.py").write_text(TESTS)
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "1 failed, 1 passed in" in ran.stdout, ran.stdout[-2000:]  # an error of the plugin's: ", 1 error in"
    assert "AttributeError" not in ran.stdout
