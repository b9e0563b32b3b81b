"""A KRaft Kafka node (broker and controller in one process) with transactions and two client listeners:
direct, for the harness (through a tunnel of the run's relay: plain text without ACLs, it is never
published), and chaos, for the system under test."""

from __future__ import annotations

import base64
import uuid

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster.service import Service

INTERNAL_PORT = 9091
DIRECT_PORT = 9092
CHAOS_PORT = 9093
CONTROLLER_PORT = 9095


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
        self.direct_address = ""  # where the harness reaches the direct listener: a relay tunnel on its loopback
        self.chaos_address = f"{alias}:{CHAOS_PORT}"
        self.with_envs(
            KAFKA_CLUSTER_ID=cluster,
            KAFKA_NODE_ID=str(node_id),
            KAFKA_VOTERS=voters,
            KAFKA_REPLICATION=str(replication),
            KAFKA_MIN_ISR=str(min_isr),
            KAFKA_ADVERTISED_INTERNAL=internal_address,
            KAFKA_HEAP="768m",
        )
        self.waiting_for(LogMessageWaitStrategy("Kafka Server started").with_startup_timeout(90))

    def with_chaos_advertised(self, address: str) -> KafkaBroker:
        """The host:port the chaos listener advertises: the route through the gate and toxiproxy."""
        self.chaos_address = address
        return self

    def with_direct_address(self, address: tuple[str, int]) -> KafkaBroker:
        """The host:port the direct listener advertises: the harness's tunnel to it (open before the start)."""
        self.direct_address = f"{address[0]}:{address[1]}"
        return self

    @property
    def bootstrap_direct(self) -> str:
        """Bootstrap servers for the harness's own clients on the host."""
        return self.direct_address

    @property
    def bootstrap_chaos(self) -> str:
        """Bootstrap servers for the system under test, inside the network."""
        return self.chaos_address

    def start(self) -> KafkaBroker:
        """Start; ready once its log says so (KafkaCluster then waits until the metadata names every node)."""
        if not self.direct_address:
            raise ValueError(f"{self.alias}: no direct address (Cluster.start opens its tunnel first)")
        self.with_envs(KAFKA_ADVERTISED_CHAOS=self.chaos_address, KAFKA_ADVERTISED_DIRECT=self.direct_address)
        super().start()
        return self
