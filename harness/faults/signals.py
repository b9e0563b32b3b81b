"""Signals to a container's processes, and whether they ended: what a kill's effect rests on.

A process is gone when `ps` no longer lists it alive, or when its container stopped or started again since the
signal (a Flink TaskManager's JVM is its container's main process: the engine restarts the container, and the
new one's pids may be the old numbers). `ps` that cannot say is an error, never "all gone"."""

from __future__ import annotations

import time

from docker.errors import APIError

from harness.cluster.service import Service
from harness.faults.processes import alive, missed

GONE_WAIT_S = 30.0  # how long a signalled process may take to end (a JVM's SIGTERM runs its shutdown hooks)


def signal_until_gone(service: Service, pids: list[int], signal: str) -> None:
    """Send SIG`signal` to `pids` and see every one end; raise when one did not (the fault errored: its row is
    ineffective, never a row whose fault took effect)."""
    since = started(service)
    status, said = send(service, pids, signal)
    survivors = set(pids)
    deadline = time.monotonic() + GONE_WAIT_S
    while status == 0 and survivors and time.monotonic() < deadline:
        survivors = alive_in(service, pids, since)
        if survivors:
            time.sleep(0.2)
    why = missed(signal, pids, status, said, survivors)
    if why is not None:
        raise RuntimeError(f"{why} in {service.alias}")


def alive_in(service: Service, pids: list[int], since: str | None) -> set[int]:
    """Which of `pids` still run in the container as `since` started it; none once it stopped or started again."""
    if started(service) != since:
        return set()
    try:
        status, listed = service.output(["ps", "-o", "pid=,stat=", "-p", ",".join(map(str, pids))])
    except APIError:
        if started(service) != since:  # it stopped between the two looks
            return set()
        raise
    if status not in (0, 1):  # 1: none of them listed
        raise RuntimeError(f"ps in {service.alias} failed (status {status}): {listed.strip()[:200]}")
    return alive(listed)


def send(service: Service, pids: list[int], signal: str) -> tuple[int, str]:
    """`kill`'s status and words. `exec`, not `output`: a kill run again after a lost reply would find its
    target gone and read as failed."""
    result = service.exec_as_root(["kill", f"-{signal}", *map(str, pids)])
    return result.exit_code, result.output.decode(errors="replace")


def started(service: Service) -> str | None:
    """When the engine last started the container, None while it does not run."""
    container = service.get_wrapped_container()
    container.reload()
    state = container.attrs["State"]
    return state["StartedAt"] if state.get("Running") and not state.get("Restarting") else None
