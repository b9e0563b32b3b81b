"""A harness killed with SIGKILL leaves nothing running: its reaper removes every container and network
of its run within 30 s of its connection closing (as testcontainers' Ryuk does)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from harness.cluster import images
from harness.cluster.engine import docker_client
from harness.cluster.labels import RUN

pytestmark = pytest.mark.integration

HARNESS = textwrap.dedent("""
    import time
    from harness.cluster import images, labels
    from harness.cluster.engine import docker_client
    from harness.cluster.reaper import Reaper, engine_socket

    run_id = labels.new_run_id()
    run_labels = labels.labels(run_id)
    reaper = Reaper(images.current().base.tag, run_labels, engine_socket()).start()
    client = docker_client()
    network = client.networks.create(f"{run_id}-net", labels=run_labels)
    client.containers.run(images.current().base.tag, ["sleep", "600"], name=f"{run_id}-worker", detach=True,
                          labels=run_labels, network=network.name)
    print(run_id, flush=True)
    time.sleep(600)
""")


def leftovers(run_id: str) -> list[str]:
    client = docker_client()
    found = [c.name for c in client.containers.list(all=True, filters={"label": f"{RUN}={run_id}"})]
    return found + [n.name for n in client.networks.list(filters={"label": f"{RUN}={run_id}"})]


def test_a_run_killed_with_sigkill_is_removed_by_its_reaper_within_30_s() -> None:
    images.build_all()
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, text=True)
    try:
        run_id = harness.stdout.readline().strip()  # type: ignore[union-attr]
        assert run_id, "the harness process did not start its run"
        assert len(leftovers(run_id)) == 3, "reaper, worker and network are up"
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(10)
        killed = time.monotonic()
        while leftovers(run_id) and time.monotonic() - killed < 30:
            time.sleep(1)
        assert not leftovers(run_id), f"left running 30 s after SIGKILL: {leftovers(run_id)}"
    finally:
        harness.kill()
