"""Iceberg's REST catalog in the run (`--store s3`): Iceberg's own RESTCatalogServer
(harness.output.iceberg.image) over a JDBC catalog in the run's PostgreSQL (a restarted catalog loses
nothing), writing table metadata to the run's S3 server. The system under test reaches it through the gate
(the relay's `catalog` port, by the sender role's toxiproxy link); the catalog reaches PostgreSQL and the S3
server directly, on the infrastructure's network; the harness asks it for a table's metadata pointer over a
tunnel of its own."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster import images
from harness.cluster.service import Service
from harness.output.iceberg.image import ICEBERG_REST
from harness.output.object_store import server as s3
from harness.output.postgres import server as postgres
from harness.progress import step

if TYPE_CHECKING:
    from harness.cluster.topology import Cluster

PORT = 8181
ALIAS = "catalog"
SERVICE = "catalog"  # as the gate names a peer that connects to it (harness.gate.relay.SERVICE_PORTS)
WAREHOUSE = f"s3://{s3.BUCKET}/warehouse"
READY = "Started oejs.Server"


class RestCatalogServer(Service):
    """RESTCatalogServer, configured by its CATALOG_* environment (Iceberg's RCKUtils)."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], database: postgres.PostgresServer,
                 objects: s3.S3Server) -> None:
        super().__init__(image, ALIAS, network, labels)
        self.with_envs(
            CATALOG_CATALOG__IMPL="org.apache.iceberg.jdbc.JdbcCatalog",
            CATALOG_URI=f"jdbc:postgresql://{database.alias}:{postgres.PORT}/{postgres.DATABASE}",
            CATALOG_JDBC_USER=postgres.ADMIN, CATALOG_JDBC_PASSWORD=database.admin_password,
            CATALOG_JDBC_SCHEMA__VERSION="V1",
            CATALOG_WAREHOUSE=WAREHOUSE,
            CATALOG_IO__IMPL="org.apache.iceberg.aws.s3.S3FileIO",
            CATALOG_S3_ENDPOINT=f"http://{objects.alias}:{s3.PORT}",
            CATALOG_S3_PATH__STYLE__ACCESS="true",
            CATALOG_S3_ACCESS__KEY__ID=objects.access_key, CATALOG_S3_SECRET__ACCESS__KEY=objects.secret_key,
            CATALOG_CLIENT_REGION=s3.REGION, AWS_REGION=s3.REGION,
        )
        self.waiting_for(LogMessageWaitStrategy(READY).with_startup_timeout(90))


class RestCatalog:
    """The run's catalog as the Iceberg store attaches it to a cluster (PostgreSQL and the S3 server first)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.objects = s3.attached(cluster)
        database = postgres.attached(cluster)
        self.server = RestCatalogServer(images.needed(ICEBERG_REST), cluster.network, cluster.labels,
                                        database.server, self.objects.server)
        with step("starting Iceberg's REST catalog"):
            self.server.start()
        cluster.link_service(SERVICE, self.server.alias, PORT)
        self.tunnel = cluster.relay.tunnel(self.server.alias, PORT)
        cluster.tunnels.append(self.tunnel)

    @property
    def services(self) -> list[Service]:
        return [self.server]

    def uri(self, direct: bool = False) -> str:
        """Where the system under test reaches the catalog: the relay's catalog port, through the gate;
        `direct`: the catalog's own address on the infrastructure's network (the harness's reads)."""
        if direct:
            return f"http://{self.server.alias}:{PORT}"
        host, port = self.cluster.relay.service_client_address(SERVICE)
        return f"http://{host}:{port}"

    def spark_settings(self, direct: bool = False) -> dict[str, str]:
        """The session's catalog: this one, through the gate, its files on the S3 server through the gate;
        `direct`: both at their own addresses, for a read of the harness's past the gate."""
        from harness.output.iceberg import CATALOG, EXTENSIONS

        prefix = f"spark.sql.catalog.{CATALOG}"
        return {"spark.sql.extensions": EXTENSIONS, prefix: "org.apache.iceberg.spark.SparkCatalog",
                f"{prefix}.type": "rest", f"{prefix}.uri": self.uri(direct),
                f"{prefix}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
                f"{prefix}.s3.endpoint": self.objects.endpoint(direct), f"{prefix}.s3.path-style-access": "true",
                f"{prefix}.s3.access-key-id": self.objects.server.access_key,
                f"{prefix}.s3.secret-access-key": self.objects.server.secret_key,
                f"{prefix}.client.region": s3.REGION}

    def create_namespace(self, namespace: str) -> bool:
        """Make a namespace; False when it is there already."""
        body = json.dumps({"namespace": [namespace]}).encode()
        request = urllib.request.Request(f"{self._address()}/v1/namespaces", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10):
                return True
        except urllib.error.HTTPError as error:
            if error.code == 409:
                return False
            raise OSError(f"the REST catalog answered {error.code}: {error.read()[:200]!r}") from error

    def _address(self) -> str:
        host, port = self.tunnel.address
        return f"http://{host}:{port}"

    def metadata_location(self, namespace: str, table: str) -> str | None:
        """The table's current metadata file, as the catalog says (None: no such table); OSError when the
        catalog does not answer."""
        try:
            with urllib.request.urlopen(f"{self._address()}/v1/namespaces/{namespace}/tables/{table}",
                                        timeout=10) as answer:
                return str(json.load(answer)["metadata-location"])
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise OSError(f"the REST catalog answered {error.code}: {error.read()[:200]!r}") from error


def attached(cluster: Cluster) -> RestCatalog:
    """The cluster's REST catalog, started by the first scenario that needs it."""
    return cluster.attached(SERVICE, RestCatalog)
