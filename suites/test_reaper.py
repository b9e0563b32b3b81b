"""A harness killed with SIGKILL leaves nothing running: its reaper removes every container and network
(and volume) of its run within 30 s of its connection closing (as testcontainers' Ryuk does), on the local engine and
on one reached only over TCP with TLS (harness.cluster.isolated_engine: as on a VM or another machine)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import docker
import pytest

from harness.cluster import images, labels
from harness.cluster.engine import docker_client
from harness.cluster.labels import RUN

pytestmark = pytest.mark.integration

HARNESS = textwrap.dedent("""
    import time
    from harness.cluster import images, labels
    from harness.cluster.engine import docker_client
    from harness.cluster.reaper import Reaper, reaper_engine

    run_id = labels.new_run_id()
    run_labels = labels.labels(run_id)
    reaper = Reaper(images.current().base.tag, run_labels, reaper_engine(), "secret").start()
    client = docker_client()
    network = client.networks.create(f"{run_id}-net", labels=run_labels)
    client.volumes.create(f"{run_id}-package", labels=run_labels)
    client.containers.run(images.current().base.tag, ["sleep", "600"], name=f"{run_id}-worker", detach=True,
                          labels=run_labels, network=network.name)
    print(run_id, flush=True)
    time.sleep(600)
""")


def leftovers(client: docker.DockerClient, run_id: str) -> list[str]:
    found = [c.name for c in client.containers.list(all=True, filters={"label": f"{RUN}={run_id}"})]
    found += [n.name for n in client.networks.list(filters={"label": f"{RUN}={run_id}"})]
    return found + [v.name for v in client.volumes.list(filters={"label": f"{RUN}={run_id}"})]


def assert_reaped_after_sigkill(harness: subprocess.Popen, client: docker.DockerClient, run_id: str) -> None:
    """SIGKILL the harness process: its reaper must remove every resource of its run within 30 s."""
    os.kill(harness.pid, signal.SIGKILL)
    harness.wait(10)
    killed = time.monotonic()
    while leftovers(client, run_id) and time.monotonic() - killed < 30:
        time.sleep(1)
    assert not leftovers(client, run_id), f"left running 30 s after SIGKILL: {leftovers(client, run_id)}"


@pytest.mark.parametrize("engine", ["local", "over TCP with TLS"])
def test_a_run_killed_with_sigkill_is_removed_by_its_reaper_within_30_s(engine: str, request) -> None:
    environment = dict(os.environ)
    if engine == "local":
        images.build_all()
        client = docker_client()
    else:
        environment.update(request.getfixturevalue("far_engine"))
        client = request.getfixturevalue("far_client")
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, text=True, env=environment)
    try:
        run_id = harness.stdout.readline().strip()  # type: ignore[union-attr]
        assert run_id, "the harness process did not start its run"
        assert len(leftovers(client, run_id)) == 4, "reaper, worker, network and volume are up"
        assert_reaped_after_sigkill(harness, client, run_id)
    finally:
        harness.kill()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_a_sweep_leaves_a_live_run_of_another_pid_namespace_alone_and_its_reaper_still_removes_it() -> None:
    """Two harness processes in separate PID namespaces on one engine (two CI jobs): this one's sweep of
    leftovers removes a dead run of its own namespace, never the other's live run; the other, killed with
    SIGKILL, is removed by its own reaper."""
    images.build_all()
    client = docker_client()
    other = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-c",
                              HARNESS], stdout=subprocess.PIPE, text=True)
    dead = labels.labels(labels.new_run_id())
    dead[labels.OWNER] = f"{labels.host_key()}/{os.getpid()}:0"  # this namespace's, and gone
    client.containers.create(images.current().base.tag, ["true"], labels=dead)
    try:
        run_id = other.stdout.readline().strip()  # type: ignore[union-attr]
        assert run_id, "the other harness process did not start its run"
        assert len(leftovers(client, run_id)) == 4
        labels.sweep_leftovers()
        assert len(leftovers(client, run_id)) == 4, "the sweep removed another namespace's live run"
        assert not leftovers(client, dead[RUN]), "the sweep left this namespace's dead run"
        assert_reaped_after_sigkill(other, client, run_id)  # --kill-child: its namespace goes with it
    finally:
        other.kill()
        labels.remove_run(dead[RUN])
