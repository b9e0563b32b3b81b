"""Where reports go: `./reports` of the current folder, or the folder given by --reports (the CLI and
the pytest plugin put it in the environment, so every part of a run and its children agree)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.errors import BadInput
from harness.settings import SETTINGS

REPORTS_ENV = SETTINGS["reports"].env


def reports_root() -> Path:
    """The reports folder: every run's folder, and what outlives runs (the coverage store)."""
    return Path(os.environ.get(REPORTS_ENV) or SETTINGS["reports"].default).resolve()


def run_report_dir(run_id: str) -> Path:
    """`reports/<run>/`: one folder per run, one sub-folder per scenario."""
    return reports_root() / run_id


# a scenario's name is a folder of the run's, and part of its topics' and its driver's names
SCENARIO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,219}")  # with its suffixes, a topic's name fits 249


def checked_name(name: str) -> str:
    """`name` when it is safe as one folder name and in a Kafka topic's; BadInput saying what to write."""
    if not SCENARIO_NAME.fullmatch(name) or ".." in name:
        raise BadInput(f"scenario name {name!r}: write letters, digits, '.', '_' and '-' only (no '..', no '/', "
                       "no spaces), starting with a letter or digit, at most 220 characters")
    return name


def scenario_dir(run_id: str, name: str) -> Path:
    """`reports/<run>/<scenario>/`, for a name that cannot lead outside it."""
    return run_report_dir(run_id) / checked_name(name)


def certificate_dir(run_id: str) -> Path:
    """`reports/<run>/certificate/`: a certification's own folder when --out gives none, so that its page
    does not replace the run's index (`reports/<run>/index.html`)."""
    return run_report_dir(run_id) / "certificate"
