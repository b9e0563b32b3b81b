"""Labels on every container and network of a run, and the sweep that removes an earlier run's leftovers.

A run's resources carry its owner: the host and PID namespace it runs in, its pid and start time. A run
killed with SIGKILL leaves them behind, and the next run on the same host and namespace removes every
labelled resource whose owner no longer exists. A pid means nothing outside its namespace: an engine
shared by two machines (or two CI jobs in separate PID namespaces) holds runs whose owners a sweep cannot
see, and it leaves them alone (their own reaper removes them).
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


def host_key() -> str:
    """This boot of this host and this PID namespace: where a pid names one process."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    return f"{boot}.{namespace}"


def owner_id(pid: int | None = None) -> str:
    """`host/pid:start-time`, unique to a live process even when pids are reused or hosts share an engine."""
    pid = pid if pid is not None else os.getpid()
    return f"{host_key()}/{pid}:{_process_start(pid)}"


def owner_alive(owner: str) -> bool:
    """Whether a resource's owner may still run: alive here, or on another host or PID namespace, where
    this process cannot tell (a label without a host, written by an older harness, is this host's)."""
    host, _, process = owner.rpartition("/")
    if host and host != host_key():
        return True
    pid, _, started = process.partition(":")
    return pid.isdigit() and _process_start(int(pid)) == started


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def labels(run_id: str) -> dict[str, str]:
    return {LABEL: "1", RUN: run_id, OWNER: owner_id()}


def sweep_leftovers() -> int:
    """Remove containers, networks and volumes of runs whose owning process is gone; return how many."""
    client = docker_client()
    removed = 0
    # sparse: the listing's own fields, no inspection of each (another run's container may be gone by then)
    for container in client.containers.list(all=True, filters={"label": LABEL}, sparse=True):
        if not owner_alive((container.attrs.get("Labels") or {}).get(OWNER, "")):
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
    for container in client.containers.list(all=True, filters={"label": f"{RUN}={run_id}"}, sparse=True):
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
