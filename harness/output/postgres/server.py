"""PostgreSQL in a container (Debian's postgresql-15, the postgres image), for a table output: on the
run's network, its port not published (the harness reaches it through a tunnel of its own through the
relay, the system under test on the network), with random passwords made for the run: one for the
harness's superuser, one for the sinks' role."""

from __future__ import annotations

import secrets

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster.service import Service
from harness.output.postgres.table import Endpoint

PORT = 5432
ALIAS = "postgres"
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
