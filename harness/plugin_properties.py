"""A test's harness properties: a scenario's outcome (`eo_outcome`), a sink matrix row this session could not
try (`eo_untried`), a cluster that did not start (`eo_not_started`). The plugin's hooks (harness.plugin) keep
them on the test's reports, where the exit status reads them (in pytest-xdist's controller too), and in the
JUnit file; the sink matrix's tests (harness.sink_matrix) and a user's own record them here.

JUnit (`--junitxml`, pytest's default junit_family xunit2): a test's harness properties are on the
<testsuite> named after the test (xunit2 has no <properties> in a <testcase>).

The exit status follows the harness's contract (harness.errors.EXIT_CODES): pytest's 1 becomes 3 when every
failed test failed only on unknown scenarios (the harness's or the infrastructure's failure), and the
sink matrix's 0 becomes 4 when it could not try the broker classes.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.certify.recorded import OBSERVED, ROW
from harness.checker.verdict import UNKNOWN
from harness.errors import EXIT_INFRASTRUCTURE, EXIT_NOT_EVERY_CLASS, EXIT_OK

OUTCOME = "eo_outcome"  # a test's property: the outcome of a scenario it ran
UNTRIED = "eo_untried"  # a sink matrix row's property: an applicable class this session could not try
NOT_STARTED = "eo_not_started"  # a test's property: the exit status of a cluster it asked for that did not start
PROPERTIES = "eo_properties"  # a test report's attribute: the (name, value) properties of its test so far
CERTIFICATE_ONLY = (ROW, OBSERVED)  # a row's JSON for the certificate: the JUnit file has its outcome already
RECORDED = pytest.StashKey[list[tuple[str, str]]]()  # a test's properties (record)


def record(item: pytest.Item, name: str, value: object) -> None:
    """A property of the test: on its reports (the exit status reads them, in pytest-xdist's controller too)
    and in the JUnit file. Not `record_property`: pytest writes those inside the <testcase>, which its
    default junit_family (xunit2) has no place for, and warns on every row."""
    item.stash.setdefault(RECORDED, []).append((name, str(value)))


class JunitProperties:
    """Writes each test's properties on the JUnit file's <testsuite> (xunit2's place for them, as
    `record_testsuite_property` does), named `<property> <test id>`, from the process that writes the file
    (record_testsuite_property is a no-op in pytest-xdist's workers: their reports reach the controller)."""

    def __init__(self, xml: Any) -> None:
        self.xml = xml

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":  # every test has one, carrying every property it recorded
            for name, value in getattr(report, PROPERTIES, ()):
                if name not in CERTIFICATE_ONLY:
                    self.xml.add_global_property(f"{name} {report.nodeid}", value)


def contract_status(status: int, stats: dict[str, list[Any]]) -> int:
    """pytest's status in the harness's terms: failures that are all unknown scenarios are the harness's
    own (3); a sink matrix that passed but skipped classes it could not try is not a certification (4); a
    cluster that could not start is its error's (2 or 3), though pytest stopped the session for it."""
    def properties(kind: str, name: str) -> list[list[Any]]:
        return [[v for k, v in getattr(r, PROPERTIES, ()) if k == name] for r in stats.get(kind, ())]

    not_started = [int(v) for p in properties("error", NOT_STARTED) + properties("failed", NOT_STARTED) for v in p]
    if not_started:
        return max(not_started)
    failed = properties("failed", OUTCOME) + properties("error", OUTCOME)
    if status == pytest.ExitCode.TESTS_FAILED and failed and all(f and set(f) == {UNKNOWN} for f in failed):
        return EXIT_INFRASTRUCTURE
    if status == EXIT_OK and any(properties("skipped", UNTRIED)):
        return EXIT_NOT_EVERY_CLASS
    return status
