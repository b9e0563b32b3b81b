"""A Docker engine as if on another machine: `dockerd` in its own network namespace, reachable from this
host only over TCP through a veth pair, and in its own mount namespace where this host's work folders
(the harness's temporary folders, the checkout, root's home and caches) are empty. Its bridge networks are
unreachable from here and host paths mean nothing to it, as with an engine in a VM (Docker Desktop,
Colima), another machine (`DOCKER_HOST=tcp://...`) or a Docker-in-Docker service in CI.

The namespace has no route beyond the veth pair: its containers reach nothing but each other and the
engine's address, so traffic stays on this machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import docker

from harness.cluster import images
from harness.cluster.engine import docker_client
from harness.cluster.engines import DATA, RUN, answers
from harness.errors import DockerUnavailable
from harness.progress import say

PORT = 2375
SOCKET = "/var/run/docker.sock"
HIDDEN = ("/tmp", "/work", "/root", "/home")  # host paths the engine must not see (mounted over, empty)


def address(index: int) -> tuple[str, str]:
    """(this host's end, the engine's end) of the veth pair of engine number `index`."""
    return f"10.210.{index}.1", f"10.210.{index}.2"


def url(index: int) -> str:
    return f"tcp://{address(index)[1]}:{PORT}"


def _names(name: str) -> tuple[str, str, str]:
    """The network namespace and the two veth ends (an interface name has at most 15 characters)."""
    short = name[:9]
    return f"eoh-{name}", f"eoh{short}-h", f"eoh{short}-n"


def start(name: str, index: int = 1) -> str:
    """Start the isolated engine `name` unless it answers; returns its DOCKER_HOST (tcp://10.210.N.2:2375)."""
    engine = url(index)
    if answers(engine):
        return engine
    if os.geteuid() != 0:
        raise DockerUnavailable(f"starting the isolated engine '{name}' needs root (namespaces, dockerd)")
    netns, outside, inside = _names(name)
    here, there = address(index)
    if not Path(f"/run/netns/{netns}").exists():
        _run("ip", "netns", "add", netns)
    if not Path(f"/sys/class/net/{outside}").exists():
        _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        _run("ip", "link", "set", inside, "netns", netns)
        _run("ip", "addr", "add", f"{here}/30", "dev", outside)
        _run("ip", "link", "set", outside, "up")
        for command in (("ip", "addr", "add", f"{there}/30", "dev", inside), ("ip", "link", "set", inside, "up"),
                        ("ip", "link", "set", "lo", "up")):
            _run("nsenter", f"--net=/run/netns/{netns}", *command)
    folder = RUN / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index").write_text(str(index))
    log = DATA / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    hide = " && ".join(f"mount -t tmpfs -o size=64m eoh-hidden {path}" for path in HIDDEN if Path(path).is_dir())
    socket = folder / "docker.sock"
    daemon = (f"dockerd --host {engine} --host unix://{socket} --data-root {DATA / name} "
              f"--exec-root {folder / 'exec'} --pidfile {folder / 'docker.pid'} "
              "--default-address-pool base=10.211.0.0/16,size=24")
    # inside, /var/run/docker.sock is this engine's, as on its own machine (what the reaper mounts, what an
    # ssh:// tunnel reaches); the host's socket file stays as it is outside
    own_socket = (f"while [ ! -S {socket} ]; do sleep 0.1; done; "
                  f"if [ -e {SOCKET} ]; then mount --bind {socket} {SOCKET}; fi; wait")
    say(f"starting the isolated Docker engine '{name}' on {engine} (its own network and mount namespaces; "
        f"log: {log}) ...")
    with log.open("ab") as out:  # nsenter --net, not `ip netns exec`: that remounts /sys, and dockerd needs its cgroups
        script = f"{hide} && {{ {daemon} & {own_socket}; }}"
        subprocess.Popen(["nsenter", f"--net=/run/netns/{netns}", "unshare", "--mount", "--propagation", "private",
                          "sh", "-c", script], stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 60
    while not answers(engine):
        if time.monotonic() > deadline:
            raise DockerUnavailable(f"the isolated engine '{name}' did not answer on {engine} within 60 s; see {log}")
        time.sleep(1)
    return engine


def stop(name: str) -> bool:
    """Stop the isolated engine `name` and remove its namespace and veth pair; False when there is none."""
    folder = RUN / name
    if not (folder / "index").exists():
        return False
    pidfile = folder / "docker.pid"
    if pidfile.exists():
        pid = int(pidfile.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    netns, outside, _ = _names(name)
    if Path(f"/sys/class/net/{outside}").exists():
        subprocess.run(["ip", "link", "delete", outside], check=False)
    if Path(f"/run/netns/{netns}").exists():
        subprocess.run(["ip", "netns", "delete", netns], check=False)
    (folder / "index").unlink()
    return True


def copy_images(engine: str) -> float:
    """Copy this run's images from the local engine into `engine` where missing (a copy, not a build: what a
    test or a benchmark needs, not what a user does); the seconds it took."""
    started = time.monotonic()
    far = docker.DockerClient(base_url=engine, timeout=600)
    for image in images.current().all:
        if not far.images.list(name=image.tag):
            say(f"copying {image.tag} into {engine} ...")
            far.images.load(docker_client().images.get(image.tag).save(named=True))
    return time.monotonic() - started


def _run(*command: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise DockerUnavailable(f"{' '.join(command)}: {result.stderr.strip() or result.returncode}")
