"""A Docker engine as if on another machine: `dockerd` in its own network namespace, reachable from this
host only over TCP with TLS (a CA, server and client certificates of its own: harness.cluster.engine_tls)
through a veth pair, and in its own mount namespace where this host's work folders
(the harness's temporary folders, the checkout, root's home and caches) are empty. Its bridge networks are
unreachable from here and host paths mean nothing to it, as with an engine in a VM (Docker Desktop,
Colima), another machine (`DOCKER_HOST=tcp://...`) or a Docker-in-Docker service in CI.

The namespace has no route beyond the veth pair: its containers reach nothing but each other and the
engine's address, so traffic stays on this machine.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import docker
from docker.tls import TLSConfig

from harness.cluster import engine_tls, images
from harness.cluster.engine import docker_client, trust_ca
from harness.cluster.engines import DATA, RUN, answers, engine_name, terminate
from harness.errors import BadInput, DockerUnavailable
from harness.progress import say

PORT = 2376  # Docker's port for TLS
SOCKET = "/var/run/docker.sock"
HIDDEN = ("/tmp", "/work", "/root", "/home")  # host paths the engine must not see (mounted over, empty)


def address(index: int) -> tuple[str, str]:
    """(this host's end, the engine's end) of the veth pair of engine number `index`."""
    return f"10.210.{index}.1", f"10.210.{index}.2"


def url(index: int) -> str:
    return f"tcp://{address(index)[1]}:{PORT}"


def certificates(name: str) -> Path:
    """The engine's client certificates: its clients' DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem)."""
    return RUN / engine_name(name) / "tls" / "client"


def environment(name: str) -> dict[str, str]:
    """DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH of the running engine `name`, as the docker CLI and
    SDK read them."""
    index = int((RUN / engine_name(name) / "index").read_text())
    return {"DOCKER_HOST": url(index), "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(certificates(name))}


def client(name: str, timeout: int = 600) -> docker.DockerClient:
    """A docker SDK client of the running engine `name`, over TLS."""
    trust_ca(environment(name))
    cert = certificates(name)
    tls = TLSConfig(client_cert=(str(cert / "cert.pem"), str(cert / "key.pem")), ca_cert=str(cert / "ca.pem"),
                    verify=True)
    return docker.DockerClient(base_url=environment(name)["DOCKER_HOST"], tls=tls, timeout=timeout)


def _names(name: str) -> tuple[str, str, str]:
    """The network namespace and the two veth ends (an interface name has at most 15 characters)."""
    short = name[:9]
    return f"eoh-{name}", f"eoh{short}-h", f"eoh{short}-n"


def start(name: str, index: int = 1, insecure_registries: tuple[str, ...] = ()) -> dict[str, str]:
    """Start the isolated engine `name` unless it answers; returns its environment (DOCKER_HOST
    tcp://10.210.N.2:2376, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH). `insecure_registries` (host:port) it pulls
    from over plain HTTP, as a CI service started with `--insecure-registry` does: one on this host's end of
    the veth pair is the only registry it reaches."""
    engine_name(name)
    if not 1 <= index <= 254:
        raise BadInput(f"--pool {index}: the isolated engine's is 1 to 254 (its addresses are 10.210.<pool>.0/30)")
    engine = url(index)
    folder = RUN / name
    if (folder / "index").exists() and answers(engine, certificates(name)):
        return environment(name)
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
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index").write_text(str(index))
    server, _ = engine_tls.make(folder / "tls", there)
    log = DATA / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    hide = " && ".join(f"mount -t tmpfs -o size=64m eoh-hidden {path}" for path in HIDDEN if Path(path).is_dir())
    socket = shlex.quote(str(folder / "docker.sock"))
    daemon = shlex.join([
        "dockerd", "--host", engine, "--host", f"unix://{folder / 'docker.sock'}", "--tlsverify",
        "--tlscacert", str(server / "ca.pem"), "--tlscert", str(server / "server-cert.pem"),
        "--tlskey", str(server / "server-key.pem"), "--data-root", str(DATA / name),
        "--exec-root", str(folder / "exec"), "--pidfile", str(folder / "docker.pid"),
        "--default-address-pool", "base=10.211.0.0/16,size=24",
        *[f"--insecure-registry={registry}" for registry in insecure_registries]])
    # inside, /var/run/docker.sock is this engine's, as on its own machine (what an ssh:// tunnel reaches); the
    # host's socket file stays as it is outside
    own_socket = (f"while [ ! -S {socket} ]; do sleep 0.1; done; "
                  f"if [ -e {SOCKET} ]; then mount --bind {socket} {SOCKET}; fi; wait")
    say(f"starting the isolated Docker engine '{name}' on {engine} with TLS (its own network and mount namespaces; "
        f"log: {log}) ...")
    with log.open("ab") as out:  # nsenter --net, not `ip netns exec`: that remounts /sys, and dockerd needs its cgroups
        script = f"{hide} && {{ {daemon} & {own_socket}; }}"
        subprocess.Popen(["nsenter", f"--net=/run/netns/{netns}", "unshare", "--mount", "--propagation", "private",
                          "sh", "-c", script], stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + 60
    while not answers(engine, certificates(name)):
        if time.monotonic() > deadline:
            raise DockerUnavailable(f"the isolated engine '{name}' did not answer on {engine} within 60 s; see {log}")
        time.sleep(1)
    return environment(name)


def stop(name: str) -> bool:
    """Stop the isolated engine `name` and remove its namespace and veth pair; False when there is none."""
    folder = RUN / engine_name(name)
    if not (folder / "index").exists():
        return False
    pidfile = folder / "docker.pid"
    if pidfile.exists():
        terminate(int(pidfile.read_text()))
    netns, outside, _ = _names(name)
    if Path(f"/sys/class/net/{outside}").exists():
        subprocess.run(["ip", "link", "delete", outside], check=False)
    if Path(f"/run/netns/{netns}").exists():
        subprocess.run(["ip", "netns", "delete", netns], check=False)
    (folder / "index").unlink()
    return True


def copy_images(name: str) -> float:
    """Copy this run's images from the local engine into the isolated engine `name` where missing (a copy, not
    a build: what a test or a benchmark needs, not what a user does); the seconds it took."""
    started = time.monotonic()
    far = client(name)
    for image in images.current().all:
        if not far.images.list(name=image.tag):
            say(f"copying {image.tag} into the isolated engine '{name}' ...")
            far.images.load(docker_client().images.get(image.tag).save(named=True))
    return time.monotonic() - started


def _run(*command: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise DockerUnavailable(f"{' '.join(command)}: {result.stderr.strip() or result.returncode}")
