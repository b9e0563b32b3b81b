"""Networks by role: from inside the system under test (a Spark worker, where a sink's code runs), a scan of
every port the run's infrastructure listens on (the brokers, toxiproxy and its API, PostgreSQL, the relay's
service port) finds nothing open, and the infrastructure's names do not resolve; the gate's client ports
(Kafka's and PostgreSQL's, read by the harness) are all it reaches."""

from __future__ import annotations

import json
import textwrap

import pytest

from harness.cluster.topology import Cluster
from harness.gate import relay
from harness.output.postgres.server import attached

pytestmark = pytest.mark.integration

LISTENING = textwrap.dedent("""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    print(sorted(ports))
""")

SCAN = textwrap.dedent("""
    import json, socket, sys
    from concurrent.futures import ThreadPoolExecutor
    targets, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])

    def opened(target):
        host, port = target
        try:
            with socket.create_connection((host, port), timeout=3):
                return True
        except OSError:
            return False

    def resolves(name):
        try:
            socket.gethostbyname(name)
            return True
        except OSError:
            return False

    with ThreadPoolExecutor(64) as pool:
        found = [t for t, ok in zip(targets, pool.map(opened, [tuple(t) for t in targets])) if ok]
    print(json.dumps({"open": found, "resolved": [n for n in names if resolves(n)]}))
""")


RAW = textwrap.dedent("""
    import socket
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        print("opened")
    except OSError as error:
        print(type(error).__name__)
""")


def listening(service) -> list[int]:  # type: ignore[no-untyped-def]
    """The TCP ports a container listens on, from its kernel's tables."""
    status, out = service.output(["python3", "-c", LISTENING])
    assert status == 0, out
    return json.loads(out.strip().splitlines()[-1])


def infrastructure_addresses(cluster: Cluster) -> dict[str, str]:
    """Each infrastructure container's address on the infrastructure's network."""
    from harness.cluster.engine import docker_client

    attrs = docker_client().networks.get(cluster.network.id).attrs
    return {endpoint["Name"].removeprefix(f"{cluster.run_id}-"): endpoint["IPv4Address"].split("/")[0]
            for endpoint in attrs.get("Containers", {}).values()}


@pytest.mark.gate
def test_the_system_under_test_reaches_only_the_gate_s_client_ports(cluster: Cluster) -> None:
    attached(cluster)  # PostgreSQL too: a table output's server is infrastructure
    addresses = infrastructure_addresses(cluster)
    services = {service.alias: service for service in cluster.services}
    infrastructure = [alias for alias in addresses if alias in services and not alias.startswith("spark")]
    assert {"toxiproxy", "gate", "postgres"} <= set(infrastructure), infrastructure
    targets = [(addresses[alias], port) for alias in infrastructure for port in listening(services[alias])]
    assert any(port == relay.SERVICE_PORT for _, port in targets), "the relay's service port was not found"
    client_ports = [relay.CLIENT_PORT + n for n in range(len(cluster.kafka.brokers))] + [*relay.SERVICE_PORTS.values()]
    gate = [("gate", port) for port in (*client_ports, relay.SERVICE_PORT)]
    worker = cluster.workers[0]
    status, out = worker.output(["python3", "-c", SCAN, json.dumps([*targets, *gate]),
                                 json.dumps(sorted({*infrastructure, "gate"}))])
    assert status == 0, out
    found = json.loads(out.strip().splitlines()[-1])

    assert sorted(map(tuple, found["open"])) == sorted(("gate", port) for port in client_ports), found
    assert found["resolved"] == ["gate"], found


@pytest.mark.gate
def test_the_system_under_test_cannot_open_a_raw_socket(cluster: Cluster) -> None:
    """NET_RAW dropped: a sink cannot read or forge the traffic on its network."""
    status, out = cluster.workers[0].output(["python3", "-c", RAW])
    assert status == 0, out
    assert out.strip().splitlines()[-1] == "PermissionError", out
