"""Nobody else steers a run: a client that reaches the engine's published ports without the run's secret
is closed by the relay (no file listed, read or written, no control taken, no client claimed, no tunnel
into the run's network) and by the reaper (it neither takes the harness's place nor reaps the live run),
and the run it tried to disturb still passes. What is published at all is what
docs/explanation/security.md lists: on the local engine, and on an isolated one reached over TCP with TLS,
where a scan of the engine's address finds nothing else open."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from harness.cluster import reaper_process
from harness.cluster.engine import engine_host
from harness.cluster.topology import Cluster
from harness.gate import relay
from harness.run.session import scenario
from suites.unit.test_security_page import PUBLISHED

pytestmark = pytest.mark.integration


HARNESS = textwrap.dedent("""
    import json, sys
    from harness.cluster import reaper_process
    from harness.run.session import session

    with session(workers=1) as opened:
        cluster = opened.cluster
        files = cluster.files
        print(json.dumps({"run": cluster.run_id, "relay": list(cluster.relay.service_address),
                          "reaper": int(cluster.reaper.get_exposed_port(reaper_process.PORT))}), flush=True)
        sys.stdin.readline()  # the strangers try meanwhile
        planted = [path for path in files.walk("/checkpoints") if path.startswith("x/")]
        result = opened.scenario("after-strangers", sink="transactional", records=2000).run()
        print(json.dumps({"outcome": result.outcome, "planted": planted, "summary": result.summary()}), flush=True)
""")


def refused(address: tuple[str, int], first_line: bytes) -> bool:
    """Whether a connection saying `first_line` is closed (or refused) without an answer."""
    try:
        with socket.create_connection(address, timeout=10) as stranger:
            stranger.sendall(first_line)
            stranger.settimeout(10)
            return stranger.recv(100) == b""
    except (ConnectionRefusedError, ConnectionResetError, BrokenPipeError):
        return True


def strangers_refused(service: tuple[str, int], reaper: tuple[str, int]) -> None:
    """Every way in without the secret is closed: files, control, a client's data, a tunnel, the reaper."""
    walk = json.dumps({"op": "walk", "path": relay.ROOT}).encode() + b"\n"
    write = json.dumps({"op": "write", "path": f"{relay.ROOT}/x/planted", "data": ""}).encode() + b"\n"
    for first in (b"files\n" + walk, b"files\n" + write, b"control\n", b"data 1\n", b"not-the-secret files\n" + walk,
                  b"connect kafka 9092\n", b"not-the-secret connect toxiproxy 8474\nGET /proxies HTTP/1.0\r\n\r\n"):
        assert refused(service, first), first
    assert refused(reaper, b"guess\n")


def open_ports(host: str) -> set[int]:
    """Every TCP port that accepts a connection at `host` (an address of this project's own making)."""
    def accepts(port: int) -> bool:
        with socket.socket() as probe:
            probe.settimeout(1)
            return probe.connect_ex((host, port)) == 0

    ports = range(1, 65536)
    with ThreadPoolExecutor(max_workers=64) as pool:
        return {port for port, ok in zip(ports, pool.map(accepts, ports, chunksize=256), strict=True) if ok}


@pytest.mark.gate
def test_a_stranger_without_the_runs_secret_is_refused_and_the_run_passes(cluster: Cluster) -> None:
    assert cluster.reaper is not None
    strangers_refused(cluster.relay.service_address,
                      (engine_host(), int(cluster.reaper.get_exposed_port(reaper_process.PORT))))
    assert cluster.reaper.get_wrapped_container().status == "running"
    landed = [path for path in cluster.files.walk(relay.ROOT) if path.startswith("x/")]  # type: ignore[union-attr]
    assert not landed, f"a stranger's file landed on the volume: {landed}"

    result = scenario(cluster, "after-strangers", sink="transactional", records=2000).run()
    assert result.outcome == "pass", result.summary()


@pytest.mark.gate
def test_only_the_listed_ports_are_published(cluster: Cluster) -> None:
    ports = set()
    for service in [*cluster.services, cluster.reaper]:
        container = service.get_wrapped_container()  # type: ignore[union-attr]
        container.reload()
        bindings = container.attrs["NetworkSettings"]["Ports"] or {}
        ports |= {int(port.split("/")[0]) for port, bound in bindings.items() if bound}
    assert ports == set(PUBLISHED), ports


def test_on_an_engine_elsewhere_strangers_are_refused_nothing_else_is_open_and_the_run_passes(
        far_engine: dict[str, str], tmp_path: Path) -> None:
    """The isolated engine (TLS, reached only through its veth pair): while a run is up, a scan of the
    engine's address finds its API (TLS) and the run's relay (and its reaper, until the harness is
    connected to it), nothing else; strangers get nothing from those; the run then passes."""
    environment = {**os.environ, **far_engine, "HARNESS_REPORTS": str(tmp_path)}
    harness = subprocess.Popen([sys.executable, "-c", HARNESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=environment)
    try:
        up = json.loads(harness.stdout.readline() or "{}")  # type: ignore[union-attr]
        assert up, "the harness process did not start its cluster"
        engine = urlsplit(far_engine["DOCKER_HOST"])
        address = engine.hostname
        assert address is not None and up["relay"][0] == address
        # the reaper stops listening once the harness's connection is in: its port may refuse as well
        assert open_ports(address) - {up["reaper"]} == {engine.port, up["relay"][1]}
        strangers_refused((address, up["relay"][1]), (address, up["reaper"]))
        harness.stdin.write("go\n")  # type: ignore[union-attr]
        harness.stdin.flush()  # type: ignore[union-attr]
        finished = json.loads(harness.stdout.readline() or "{}")  # type: ignore[union-attr]
        assert finished.get("planted") == [], finished
        assert finished.get("outcome") == "pass", finished
        assert harness.wait(120) == 0
    finally:
        harness.kill()
