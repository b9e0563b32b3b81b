"""Labels on every container and network of a run, and the sweep that removes an earlier run's leftovers.

A run's resources carry its owner's pid and start time; a run killed with SIGKILL leaves them behind,
and the next run removes every labelled resource whose owner no longer exists.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

from docker.errors import APIError, NotFound

from harness.cluster.engine import docker_client
from harness.progress import say

LABEL = "eo-harness"
RUN = "eo-harness.run"
OWNER = "eo-harness.owner"


def _process_start(pid: int) -> str:
    """The kernel's start time of a process (field 22 of /proc/PID/stat); '' when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner_id(pid: int | None = None) -> str:
    """`pid:start-time`, unique to a live process even when pids are reused."""
    pid = pid if pid is not None else os.getpid()
    return f"{pid}:{_process_start(pid)}"


def owner_alive(owner: str) -> bool:
    pid, _, started = owner.partition(":")
    return pid.isdigit() and _process_start(int(pid)) == started


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def labels(run_id: str) -> dict[str, str]:
    return {LABEL: "1", RUN: run_id, OWNER: owner_id()}


def sweep_leftovers() -> int:
    """Remove containers, networks and volumes of runs whose owning process is gone; return how many."""
    client = docker_client()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        if not owner_alive(container.labels.get(OWNER, "")):
            _ignore_gone(partial(container.remove, force=True, v=True))
            removed += 1
    for network in client.networks.list(filters={"label": LABEL}):
        if not owner_alive(network.attrs.get("Labels", {}).get(OWNER, "")):
            _ignore_gone(network.remove)
            removed += 1
    for volume in client.volumes.list(filters={"label": LABEL}):
        if not owner_alive((volume.attrs.get("Labels") or {}).get(OWNER, "")):
            _ignore_gone(partial(volume.remove, force=True))
            removed += 1
    if removed:
        say(f"removed {removed} leftover containers/networks of earlier runs")
    return removed


def remove_run(run_id: str) -> None:
    """Remove every container, network and volume of one run."""
    client = docker_client()
    for container in client.containers.list(all=True, filters={"label": f"{RUN}={run_id}"}):
        _ignore_gone(partial(container.remove, force=True, v=True))
    for network in client.networks.list(filters={"label": f"{RUN}={run_id}"}):
        _ignore_gone(network.remove)
    for volume in client.volumes.list(filters={"label": f"{RUN}={run_id}"}):
        _ignore_gone(partial(volume.remove, force=True))


def _ignore_gone(action: Callable[[], object]) -> None:
    try:
        action()
    except NotFound:
        pass
    except APIError as error:
        if "removal of container" not in str(error) and "in progress" not in str(error):
            raise
