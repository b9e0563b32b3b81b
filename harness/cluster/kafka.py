"""A KRaft Kafka node (broker and controller in one process) with transactions and two client listeners:
direct, for the harness, and chaos, for the system under test."""

from __future__ import annotations

import base64
import socket
import uuid

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster.engine import engine_host
from harness.cluster.service import Service

INTERNAL_PORT = 9091
DIRECT_PORT = 9092
CHAOS_PORT = 9093
CONTROLLER_PORT = 9095


def free_local_port() -> int:
    """A free TCP port on 127.0.0.1 (the broker must advertise its host port before it starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cluster_id() -> str:
    """A random KRaft cluster id. Like Kafka's own Uuid.randomUuid, never one that starts with '-':
    the storage tool would read it as an option and the broker would not start (1 start in 64)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:22]
        if not candidate.startswith("-"):
            return candidate


class KafkaBroker(Service):
    """One node. The harness uses the direct listener; the system under test the chaos one; the other
    brokers the internal one (at `internal_address`, through toxiproxy)."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], *, node_id: int, alias: str,
                 cluster: str, voters: str, replication: int, min_isr: int, internal_address: str) -> None:
        super().__init__(image, alias, network, labels)
        self.node_id = node_id
        self.direct_port = free_local_port()
        self.chaos_address = f"{alias}:{CHAOS_PORT}"
        self.with_published_port(DIRECT_PORT, self.direct_port)
        self.with_envs(
            KAFKA_CLUSTER_ID=cluster,
            KAFKA_NODE_ID=str(node_id),
            KAFKA_VOTERS=voters,
            KAFKA_REPLICATION=str(replication),
            KAFKA_MIN_ISR=str(min_isr),
            KAFKA_ADVERTISED_INTERNAL=internal_address,
            KAFKA_ADVERTISED_DIRECT=f"{engine_host()}:{self.direct_port}",
            KAFKA_HEAP="768m",
        )
        self.waiting_for(LogMessageWaitStrategy("Kafka Server started").with_startup_timeout(90))

    def with_chaos_advertised(self, address: str) -> KafkaBroker:
        """The host:port the chaos listener advertises: the route through the gate and toxiproxy."""
        self.chaos_address = address
        return self

    @property
    def bootstrap_direct(self) -> str:
        """Bootstrap servers for the harness's own clients on the host."""
        return f"{engine_host()}:{self.direct_port}"

    @property
    def bootstrap_chaos(self) -> str:
        """Bootstrap servers for the system under test, inside the network."""
        return self.chaos_address

    def start(self) -> KafkaBroker:
        """Start; ready once its log says so (KafkaCluster then waits until the metadata names every node)."""
        self.with_env("KAFKA_ADVERTISED_CHAOS", self.chaos_address)
        super().start()
        return self
