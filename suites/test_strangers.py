"""Nobody else steers a run: a client that reaches the engine's published ports without the run's secret
is closed by the relay (no file listed, read or written, no control taken, no client claimed) and by
the reaper (it neither takes the harness's place nor reaps the live run), and the run it tried to
disturb still passes. What is published at all is what docs/explanation/security.md lists."""

from __future__ import annotations

import json
import socket

import pytest

from harness.cluster import reaper_process
from harness.cluster.engine import engine_host
from harness.cluster.topology import ROLES, Cluster, postgres_link_port
from harness.gate import relay
from harness.run.session import scenario

pytestmark = pytest.mark.integration

# container port -> what it is, for every container of a run (docs/explanation/security.md says why each)
PUBLISHED = {relay.SERVICE_PORT: "relay", reaper_process.PORT: "reaper", 9092: "kafka direct listener",
             8474: "toxiproxy API"}


def refused(address: tuple[str, int], first_line: bytes) -> bool:
    """Whether a connection saying `first_line` is closed (or refused) without an answer."""
    try:
        with socket.create_connection(address, timeout=10) as stranger:
            stranger.sendall(first_line)
            stranger.settimeout(10)
            return stranger.recv(100) == b""
    except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError):
        return True


def test_a_stranger_without_the_runs_secret_is_refused_and_the_run_passes(cluster: Cluster) -> None:
    service = cluster.relay.service_address
    walk = json.dumps({"op": "walk", "path": relay.ROOT}).encode() + b"\n"
    write = json.dumps({"op": "write", "path": f"{relay.ROOT}/x/planted", "data": ""}).encode() + b"\n"
    for first in (b"files\n" + walk, b"files\n" + write, b"control\n", b"data 1\n", b"not-the-secret files\n" + walk):
        assert refused(service, first), first
    assert cluster.reaper is not None
    reaper = (engine_host(), int(cluster.reaper.get_exposed_port(reaper_process.PORT)))
    assert refused(reaper, b"guess\n")
    assert cluster.reaper.get_wrapped_container().status == "running"
    landed = [path for path in cluster.files.walk(relay.ROOT) if path.startswith("x/")]  # type: ignore[union-attr]
    assert not landed, f"a stranger's file landed on the volume: {landed}"

    result = scenario(cluster, "after-strangers", sink="transactional", records=2000).run()
    assert result.outcome == "pass", result.summary()


def test_only_the_listed_ports_are_published(cluster: Cluster) -> None:
    ports = set()
    for service in [*cluster.services, cluster.reaper]:
        container = service.get_wrapped_container()  # type: ignore[union-attr]
        container.reload()
        bindings = container.attrs["NetworkSettings"]["Ports"] or {}
        ports |= {int(port.split("/")[0]) for port, bound in bindings.items() if bound}
    links = {port for port in ports if 9100 <= port < 9200}  # toxiproxy's links, one per role and broker
    links |= {postgres_link_port(role) for role in ROLES}  # and one per role to PostgreSQL
    assert ports - links == set(PUBLISHED), ports
