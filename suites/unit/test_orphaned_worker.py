"""A spread run's worker outlives no parent: a harness killed with SIGKILL stops nothing itself, so each
worker stops as on SIGTERM (and its cluster's `with` block removes the cluster)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

WORKER = textwrap.dedent("""
    import signal, sys, time
    from harness.certify.worker import stop_when_orphaned
    signal.signal(signal.SIGTERM, lambda *_: (open(sys.argv[1], "w").write("stopped"), sys.exit(0)))
    stop_when_orphaned()
    print("ready", flush=True)
    time.sleep(60)
""")
PARENT = textwrap.dedent("""
    import subprocess, sys
    worker = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline() == "ready\\n"
    print(worker.pid, flush=True)
    worker.wait()
""")


def test_a_worker_whose_parent_is_killed_stops_as_on_sigterm(tmp_path: Path) -> None:
    mark = tmp_path / "stopped"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, WORKER, str(mark)], stdout=subprocess.PIPE, text=True)
    worker_pid = int(parent.stdout.readline())  # type: ignore[union-attr]
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert mark.read_text() == "stopped"
    finally:
        try:
            os.kill(worker_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
