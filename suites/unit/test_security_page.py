"""The security page's table of what a run publishes is the one suites/test_strangers.py checks on a
running cluster (the bindings of every container, and a scan of an isolated engine's address): neither
goes stale alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cluster import reaper_process
from harness.gate import relay

pytestmark = pytest.mark.unit

SECURITY_PAGE = Path(__file__).parent.parent.parent / "docs" / "explanation" / "security.md"
# container port -> what it is, for every container of a run (docs/explanation/security.md says why each)
PUBLISHED = {relay.SERVICE_PORT: "relay", reaper_process.PORT: "reaper"}


def test_the_security_page_lists_what_a_run_publishes() -> None:
    section = SECURITY_PAGE.read_text().split("## What is published\n", 1)[1].split("\n## ", 1)[0]
    listed = {int(port) for port in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert listed == set(PUBLISHED)
