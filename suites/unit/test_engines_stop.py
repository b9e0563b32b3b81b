"""Stopping an engine this process started: its dockerd is a child, a zombie once it exits until it is reaped,
so waiting for its /proc entry to go would take the whole minute."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from harness.cluster import engines

pytestmark = pytest.mark.unit


def test_stopping_an_engine_this_process_started_returns_once_it_has_exited(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    monkeypatch.setattr(engines, "RUN", tmp_path)
    child = subprocess.Popen(["sleep", "60"])  # stands for the dockerd start() runs
    try:
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "docker.pid").write_text(str(child.pid))
        started = time.monotonic()
        engines.stop("mine")
        assert time.monotonic() - started < 5
        assert not Path(f"/proc/{child.pid}").exists()  # reaped, not left a zombie
    finally:
        child.kill()
        child.wait()
