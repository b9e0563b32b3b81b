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

from harness.cluster import images
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
""")
# then: a dead run of its own namespace (a container whose owner is gone), and a sweep when told
SWEEP = textwrap.dedent("""
    import sys
    dead = labels.labels(labels.new_run_id())
    dead[labels.OWNER] = f"{labels.host_key()}/999999:0"
    client.containers.create(images.current().base.tag, ["true"], labels=dead)
    print(dead[labels.RUN], flush=True)
    if sys.stdin.readline().strip() == "sweep":
        labels.sweep_leftovers()
        print("swept", flush=True)
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


def engine_under_test(engine: str, request) -> tuple[dict[str, str], docker.DockerClient]:  # type: ignore[no-untyped-def]
    """The harness processes' environment and a client of the engine they run on: the local one (images
    built), or the isolated engine over TLS (its fixtures)."""
    environment = dict(os.environ)
    if engine == "local":
        images.build_all()
        return environment, docker_client()
    environment.update(request.getfixturevalue("far_engine"))
    return environment, request.getfixturevalue("far_client")


@pytest.mark.parametrize("engine", [pytest.param("local", marks=pytest.mark.gate), "over TCP with TLS"])
def test_a_run_killed_with_sigkill_is_removed_by_its_reaper_within_30_s(engine: str, request) -> None:
    environment, client = engine_under_test(engine, request)
    harness = subprocess.Popen([sys.executable, "-c", HARNESS + "time.sleep(600)\n"], stdout=subprocess.PIPE, text=True,
                               env=environment)
    try:
        run_id = harness.stdout.readline().strip()  # type: ignore[union-attr]
        assert run_id, "the harness process did not start its run"
        assert len(leftovers(client, run_id)) == 4, "reaper, worker, network and volume are up"
        assert_reaped_after_sigkill(harness, client, run_id)
    finally:
        harness.kill()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
@pytest.mark.parametrize("engine", [pytest.param("local", marks=pytest.mark.gate), "over TCP with TLS"])
def test_two_harnesses_in_their_own_pid_namespaces_sweep_around_each_other_and_each_is_reaped_alone(
        engine: str, request) -> None:
    """Two harness processes in separate PID namespaces on one engine (two CI jobs): each one's sweep of
    leftovers leaves the other's live run alone (and removes a dead run of this namespace); each, killed with
    SIGKILL, is removed by its own reaper while the other's run stays."""
    environment, client = engine_under_test(engine, request)
    harnesses = [subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-c",
                                   HARNESS + SWEEP], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=environment) for _ in range(2)]
    dead: list[str] = []
    try:
        runs = []
        for harness in harnesses:
            runs.append(harness.stdout.readline().strip())  # type: ignore[union-attr]
            dead.append(harness.stdout.readline().strip())  # type: ignore[union-attr]
        assert all(runs) and all(dead), "a harness process did not start its run"
        for harness in harnesses:  # each sweeps while the other's run is live
            harness.stdin.write("sweep\n")  # type: ignore[union-attr]
            harness.stdin.flush()  # type: ignore[union-attr]
            assert harness.stdout.readline().strip() == "swept"  # type: ignore[union-attr]
        assert [len(leftovers(client, run)) for run in runs] == [4, 4], "a sweep removed another namespace's live run"
        assert [leftovers(client, run) for run in dead] == [[], []], "a sweep left its own namespace's dead run"
        assert_reaped_after_sigkill(harnesses[0], client, runs[0])  # --kill-child: its namespace goes with it
        assert len(leftovers(client, runs[1])) == 4, "the other's run went with the killed one"
        assert_reaped_after_sigkill(harnesses[1], client, runs[1])
    finally:
        for harness in harnesses:
            harness.kill()
        for run in dead:  # left only when the test failed
            for container in client.containers.list(all=True, filters={"label": f"{RUN}={run}"}):
                container.remove(force=True)
