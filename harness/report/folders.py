"""Where reports go: `./reports` of the current folder, or the folder given by --reports (the CLI and
the pytest plugin put it in the environment, so every part of a run and its children agree)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.settings import SETTINGS

REPORTS_ENV = SETTINGS["reports"].env


def reports_root() -> Path:
    """The reports folder: every run's folder, and what outlives runs (the coverage store)."""
    return Path(os.environ.get(REPORTS_ENV) or SETTINGS["reports"].default).resolve()


def run_report_dir(run_id: str) -> Path:
    """`reports/<run>/`: one folder per run, one sub-folder per scenario."""
    return reports_root() / run_id


def certificate_dir(run_id: str) -> Path:
    """`reports/<run>/certificate/`: a certification's own folder when --out gives none, so that its page
    does not replace the run's index (`reports/<run>/index.html`)."""
    return run_report_dir(run_id) / "certificate"
