"""More Docker engines on this machine, to spread a matrix over engines (`--docker-hosts`) and to test that.

Each has its own socket, data root, exec root, default bridge (an interface made for it) and address
pool, and no iptables rules of its own, as Docker documents for several daemons on one host, so it never
touches the first engine's networks. Its images are built into it like into any engine (the host's
download caches are shared).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from harness.errors import BadInput, DockerUnavailable
from harness.progress import say

DATA = Path("/var/lib/eo-harness-engines")
RUN = Path("/run/eo-harness-engines")
DEFAULT_BRIDGE = "docker0"  # the first engine's
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,29}")  # goes into interface, namespace and folder names, run as root


def engine_name(name: str) -> str:
    """`name`, refused (BadInput) unless it is safe in a path, an interface name and a root shell command."""
    if not NAME.fullmatch(name):
        raise BadInput(f"engine name {name!r}: lower-case letters, digits and '-', at most 30, not starting with '-'")
    return name


def host(name: str) -> str:
    """The DOCKER_HOST of engine `name`."""
    return f"unix://{RUN / name / 'docker.sock'}"


def answers(docker_host: str, certificates: Path | None = None) -> bool:
    """Whether the engine answers (over TLS with the client certificates in `certificates`, when given)."""
    tls = ["--tlsverify", f"--tlscacert={certificates / 'ca.pem'}", f"--tlscert={certificates / 'cert.pem'}",
           f"--tlskey={certificates / 'key.pem'}"] if certificates is not None else []
    result = subprocess.run(["docker", "-H", docker_host, *tls, "info"], capture_output=True, timeout=30)
    return result.returncode == 0


def start(name: str, pool: int = 1) -> str:
    """Start engine `name` unless it answers; `pool` picks its address pool (10.20<pool>.0.0/16, one
    per engine). Returns its DOCKER_HOST."""
    url = host(engine_name(name))
    if answers(url):
        return url
    if os.geteuid() != 0:
        raise DockerUnavailable(f"starting engine '{name}' needs root (dockerd)")
    folder = RUN / name
    folder.mkdir(parents=True, exist_ok=True)
    log = DATA / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    bridge = _bridge(name, pool)
    _forward(pool, add=True)
    first_bridge = _addresses(DEFAULT_BRIDGE)
    say(f"starting Docker engine '{name}' on {url} (log: {log}) ...")
    (folder / "pool").write_text(str(pool))
    with log.open("ab") as out:
        subprocess.Popen(
            ["dockerd", "--host", url, "--data-root", str(DATA / name), "--exec-root", str(folder / "exec"),
             "--pidfile", str(folder / "docker.pid"), "--bridge", bridge, "--iptables=false",
             "--default-address-pool", f"base=10.{200 + pool}.0.0/16,size=24"],
            stdout=out, stderr=out, start_new_session=True,
        )
    deadline = time.monotonic() + 60
    try:
        while not answers(url):
            if time.monotonic() > deadline:
                raise DockerUnavailable(f"engine '{name}' did not answer within 60 s; see {log}")
            time.sleep(1)
    finally:
        _restore(first_bridge)
    return url


def stop(name: str) -> None:
    """Stop engine `name` and remove its bridge (its containers stop with it; its images stay)."""
    pidfile = RUN / engine_name(name) / "docker.pid"
    if pidfile.exists():
        terminate(int(pidfile.read_text()))
    pool = RUN / name / "pool"
    if pool.exists():
        _forward(int(pool.read_text()), add=False)
    if Path(f"/sys/class/net/{_bridge_name(name)}").exists():
        subprocess.run(["ip", "link", "delete", _bridge_name(name)], check=False)


def terminate(pid: int, timeout: float = 60) -> None:
    """SIGTERM `pid` and wait up to `timeout` s until it has exited."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.5)


def _running(pid: int) -> bool:
    """Whether `pid` runs. A dockerd this process started is its child: once it exits it stays a zombie, its
    /proc entry there, until it is reaped (here); a zombie of another parent's has exited all the same."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] != "Z":  # the state follows the command name, which may hold ')'
        return True
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not this process's child
        pass
    return False


def _bridge_name(name: str) -> str:
    return f"eoh-{name}"[:15]  # an interface name has at most 15 characters


def _bridge(name: str, pool: int) -> str:
    """The engine's default bridge (docker0 belongs to the first engine): made once, 10.199.<pool>.1/24."""
    bridge = _bridge_name(name)
    if not Path(f"/sys/class/net/{bridge}").exists():
        for command in (["ip", "link", "add", "name", bridge, "type", "bridge"],
                        ["ip", "addr", "add", f"10.199.{pool}.1/24", "dev", bridge],
                        ["ip", "link", "set", bridge, "up"]):
            subprocess.run(command, check=True, capture_output=True)
    return bridge


def _forward(pool: int, add: bool) -> None:
    """Let the engine's containers reach each other: the first engine sets the FORWARD policy to DROP,
    and bridged traffic passes iptables (br_netfilter), so without iptables rules of its own this
    engine's networks would be cut. Added once, removed on stop."""
    for rule in (["-s", f"10.{200 + pool}.0.0/16", "-j", "ACCEPT"], ["-d", f"10.{200 + pool}.0.0/16", "-j", "ACCEPT"]):
        present = subprocess.run(["iptables", "-C", "FORWARD", *rule], capture_output=True).returncode == 0
        if add and not present:
            subprocess.run(["iptables", "-I", "FORWARD", "1", *rule], check=True, capture_output=True)
        elif not add and present:
            subprocess.run(["iptables", "-D", "FORWARD", *rule], check=True, capture_output=True)


def _addresses(interface: str) -> list[str]:
    """The IPv4 addresses (CIDR) of an interface; none when it does not exist."""
    if not Path(f"/sys/class/net/{interface}").exists():
        return []
    shown = subprocess.run(["ip", "-j", "-4", "addr", "show", "dev", interface], capture_output=True, text=True)
    return [f"{a['local']}/{a['prefixlen']}" for entry in json.loads(shown.stdout or "[]")
            for a in entry.get("addr_info", [])]


def _restore(addresses: list[str]) -> None:
    """dockerd 20.10 deletes docker0 when it starts with another default bridge, which cuts the first
    engine's default network (the reaper's): put it back as it was."""
    if not addresses or Path(f"/sys/class/net/{DEFAULT_BRIDGE}").exists():
        return
    subprocess.run(["ip", "link", "add", "name", DEFAULT_BRIDGE, "type", "bridge"], check=True, capture_output=True)
    for address in addresses:
        subprocess.run(["ip", "addr", "add", address, "dev", DEFAULT_BRIDGE], check=True, capture_output=True)
    subprocess.run(["ip", "link", "set", DEFAULT_BRIDGE, "up"], check=True, capture_output=True)
    say(f"{DEFAULT_BRIDGE} restored ({', '.join(addresses)}): the new engine's dockerd had removed it")
