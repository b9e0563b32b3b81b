"""The plugin's JUnit file under pytest's default junit_family (xunit2): no warning on any row (`-W error`
would make each an error), every row has a class name (the sink matrix's too, though it lives outside the
project), a test's harness properties (not the certificate's JSON) sit on the <testsuite> named after the
test (xunit2 has no place for them in a <testcase>), with pytest-xdist too; and a cluster that cannot
start is an error row saying why, with the harness's exit status, not an empty file."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.checker.verdict import PASS, UNKNOWN
from harness.errors import EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE
from harness.plugin_properties import NOT_STARTED, OUTCOME, PROPERTIES, contract_status

pytestmark = pytest.mark.unit

TESTS = f'''
from harness.certify.recorded import ROW
from harness.plugin_properties import OUTCOME, record


def test_a_scenario(request):
    record(request.node, OUTCOME, "{PASS}")
    record(request.node, ROW, '{{"row": "for the certificate"}}')


def test_without_properties():
    pass
'''


def _pytest(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], ET.Element]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("HARNESS_")}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "--junitxml", str(folder / "junit.xml"), "--reports", str(folder / "reports"), *args],
                         cwd=folder, capture_output=True, text=True, timeout=180, env=environment)
    return ran, ET.parse(folder / "junit.xml").getroot().find("testsuite")  # type: ignore[return-value]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_rows_have_a_class_name_and_their_properties_without_warnings(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_project.py").write_text(TESTS)
    ran, suite = _pytest(tmp_path, "-W", "error", *workers, "test_project.py")
    assert ran.returncode == 0 and "warning" not in ran.stdout.lower(), ran.stdout[-2000:]
    assert {case.get("classname") for case in suite.iter("testcase")} == {"test_project"}
    assert all(case.find("properties") is None for case in suite.iter("testcase"))  # xunit2's schema
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties == {f"{OUTCOME} test_project.py::test_a_scenario": PASS}  # a row's JSON is the
    # certificate's, not the JUnit file's


def test_a_cluster_that_cannot_start_is_an_error_row_saying_why(tmp_path: Path) -> None:
    # not -W error: docker-py leaves the socket of an engine that did not answer to the garbage collector
    ran, suite = _pytest(tmp_path, "-m", "chaos", "--sink", "transactional",
                         "--docker-hosts", f"unix://{tmp_path / 'no-engine.sock'}")
    assert ran.returncode == EXIT_INFRASTRUCTURE, ran.stdout[-2000:]
    assert suite.get("errors") == suite.get("tests") == "1"  # it stopped there: one row, not one per row
    case = suite.find("testcase")
    assert case is not None and case.get("classname") == "harness.sink_matrix"
    assert case.get("name") == "test_sink_scenario[transactional::baseline]"
    error = case.find("error")
    assert error is not None and "no Docker engine answers" in error.get("message", "")
    assert "another exception occurred" not in (error.text or ""), error.text


def test_the_exit_status_is_the_cluster_s_error() -> None:
    def report(*properties: tuple[str, object]) -> SimpleNamespace:
        return SimpleNamespace(**{PROPERTIES: list(properties)})

    interrupted = 2  # pytest's status once the session stopped for it
    assert contract_status(interrupted, {"error": [report((NOT_STARTED, "3"))]}) == EXIT_INFRASTRUCTURE
    assert contract_status(interrupted, {"error": [report((NOT_STARTED, "2"))]}) == EXIT_BAD_INPUT
    assert contract_status(1, {"failed": [report((OUTCOME, UNKNOWN))]}) == EXIT_INFRASTRUCTURE
