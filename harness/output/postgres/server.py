"""PostgreSQL in a container (Debian's postgresql-15, the postgres image), for a table output: on the
run's network, its port not published (the harness reaches it through a tunnel of its own through the
relay, the system under test on the network), with random passwords made for the run: one for the
harness's superuser, one for the sinks' role."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster import images
from harness.cluster.service import Service
from harness.output.postgres.image import POSTGRES
from harness.output.postgres.table import Endpoint
from harness.progress import step

if TYPE_CHECKING:
    from harness.cluster.topology import Cluster
    from harness.gate.tunnel import Tunnel

PORT = 5432
ALIAS = "postgres"
SERVICE = "postgres"  # as the gate names a peer that connects to it (harness.gate.points.Peer.service)
DATABASE = "eo"
ADMIN = "eo_harness"  # the harness's own role: prepares the tables, reads them, settles commit holds
USER = "eo_sink"  # the sinks' role: owns the database, writes the tables
READY = "database system is ready to accept connections"


class PostgresServer(Service):
    """One server, a fresh cluster per run (initdb at start)."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], alias: str = ALIAS) -> None:
        super().__init__(image, alias, network, labels)
        self.admin_password = secrets.token_hex(16)
        self.password = secrets.token_hex(16)
        self.with_envs(EO_PG_DATABASE=DATABASE, EO_PG_ADMIN=ADMIN, EO_PG_ADMIN_PASSWORD=self.admin_password,
                       EO_PG_USER=USER, EO_PG_PASSWORD=self.password)
        self.waiting_for(LogMessageWaitStrategy(READY).with_startup_timeout(60))

    def admin(self, host: str, port: int) -> Endpoint:
        """The harness's connection through `host:port` (its tunnel through the relay), as the superuser."""
        return Endpoint(host, port, DATABASE, ADMIN, self.admin_password)

    def for_sinks(self, host: str, port: int) -> Endpoint:
        """The sinks' connection through `host:port` (the route the topology gives them), as the sinks' role."""
        return Endpoint(host, port, DATABASE, USER, self.password)


class Postgres:
    """The run's PostgreSQL as the postgres store attaches it to a cluster (harness.cluster.topology): the
    server, its toxiproxy links, and the harness's own tunnel through the relay."""

    def __init__(self, cluster: Cluster) -> None:
        """Start the server; NotReady (exit 3) with its log when it does not (the session keeps the log)."""
        self.cluster = cluster
        self.server = PostgresServer(images.needed(POSTGRES), cluster.network, cluster.labels)
        with step("starting PostgreSQL"):
            self.server.start()
        cluster.link_service(SERVICE, self.server.alias, PORT)
        self._tunnel: Tunnel | None = None

    @property
    def services(self) -> list[Service]:
        return [self.server]

    def for_sinks(self) -> Endpoint:
        """The sinks' connection: where the system under test reaches PostgreSQL, the relay's PostgreSQL
        port (the gate reads the protocol, harness.gate.pg_proxy, and sends it on by the sender role's
        toxiproxy link, as it does Kafka's), as the sinks' role."""
        return self.server.for_sinks(*self.cluster.relay.service_client_address(SERVICE))

    def for_harness(self) -> Endpoint:
        """The harness's connection: a tunnel of its own through the relay (never through the gate, nothing
        published), as the superuser."""
        if self._tunnel is None:
            self._tunnel = self.cluster.relay.tunnel(self.server.alias, PORT)
            self.cluster.tunnels.append(self._tunnel)
        return self.server.admin(*self._tunnel.address)


def attached(cluster: Cluster) -> Postgres:
    """The cluster's PostgreSQL, started by the first scenario that needs it."""
    return cluster.attached(SERVICE, Postgres)
