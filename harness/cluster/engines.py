"""More Docker engines on this machine, to spread a matrix over engines (`--docker-hosts`) and to test that.

Each has its own socket, data root, exec root and address pool, no default bridge and no iptables rules
of its own, as Docker documents for several daemons on one host, so it never touches the first engine's
networks. Its images are built into it like into any engine (the host's download caches are shared).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from harness.errors import DockerUnavailable
from harness.progress import say

DATA = Path("/var/lib/eo-harness-engines")
RUN = Path("/run/eo-harness-engines")


def host(name: str) -> str:
    """The DOCKER_HOST of engine `name`."""
    return f"unix://{RUN / name / 'docker.sock'}"


def answers(docker_host: str) -> bool:
    result = subprocess.run(["docker", "-H", docker_host, "info"], capture_output=True, timeout=30)
    return result.returncode == 0


def start(name: str, pool: int = 1) -> str:
    """Start engine `name` unless it answers; `pool` picks its address pool (10.20<pool>.0.0/16, one
    per engine). Returns its DOCKER_HOST."""
    url = host(name)
    if answers(url):
        return url
    if os.geteuid() != 0:
        raise DockerUnavailable(f"starting engine '{name}' needs root (dockerd)")
    folder = RUN / name
    folder.mkdir(parents=True, exist_ok=True)
    log = DATA / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    say(f"starting Docker engine '{name}' on {url} (log: {log}) ...")
    with log.open("ab") as out:
        subprocess.Popen(
            ["dockerd", "--host", url, "--data-root", str(DATA / name), "--exec-root", str(folder / "exec"),
             "--pidfile", str(folder / "docker.pid"), "--bridge", "none", "--iptables=false",
             "--default-address-pool", f"base=10.{200 + pool}.0.0/16,size=24"],
            stdout=out, stderr=out, start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while not answers(url):
        if time.monotonic() > deadline:
            raise DockerUnavailable(f"engine '{name}' did not answer within 60 s; see {log}")
        time.sleep(1)
    return url


def stop(name: str) -> None:
    """Stop engine `name` (its containers stop with it; its images stay in its data root)."""
    pidfile = RUN / name / "docker.pid"
    if not pidfile.exists():
        return
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
