"""The run's S3 server: versitygw (harness.output.object_store.image), its posix backend on a volume of its
own that no container of the system under test mounts (a bucket is a folder, an object a file), with a
key pair made at random for the run. The system under test reaches it through the gate (relay's `s3` port,
by the sender role's toxiproxy link), the harness through a tunnel of its own."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster import images
from harness.cluster.engine import docker_client
from harness.cluster.service import Service
from harness.output.object_store.files import REGION, S3Files
from harness.output.object_store.image import VERSITYGW
from harness.progress import step

if TYPE_CHECKING:
    from harness.cluster.topology import Cluster

PORT = 7070
ALIAS = "s3"
SERVICE = "s3"  # as the gate names a peer that connects to it (harness.gate.relay.SERVICE_PORTS)
BUCKET = "harness"
DATA = "/data"
READY = "service listening on"


class S3Server(Service):
    """versitygw over a volume of its own (`volume`, made with the run's labels: reaped with it)."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], volume: str,
                 alias: str = ALIAS) -> None:
        super().__init__(image, alias, network, labels)
        self.access_key = "H" + secrets.token_hex(9).upper()
        self.secret_key = secrets.token_hex(20)
        self.with_envs(ROOT_ACCESS_KEY_ID=self.access_key, ROOT_SECRET_ACCESS_KEY=self.secret_key)
        self.with_volume_mapping(volume, DATA, "rw")
        self.with_command(["--port", f":{PORT}", "posix", DATA])  # each request logged: its log is evidence
        self.waiting_for(LogMessageWaitStrategy(READY).with_startup_timeout(60))


class ObjectStore:
    """The run's S3 server as a table store attaches it to a cluster (harness.cluster.topology): the server,
    its toxiproxy links, the bucket tables go into, and the harness's own reads."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        tag = images.needed(VERSITYGW)
        volume = f"{cluster.checkpoints}-s3"
        docker_client().volumes.create(volume, labels=cluster.labels)
        self.server = S3Server(tag, cluster.network, cluster.labels, volume)
        with step("starting the S3 server"):
            self.server.start()
        cluster.link_service(SERVICE, self.server.alias, PORT)
        tunnel = cluster.relay.tunnel(self.server.alias, PORT)
        cluster.tunnels.append(tunnel)
        self.files = S3Files(tunnel.address, self.server.access_key, self.server.secret_key)
        self.files.make_bucket(BUCKET)

    @property
    def services(self) -> list[Service]:
        return [self.server]

    def endpoint(self, direct: bool = False) -> str:
        """Where the system under test reaches the server: the relay's S3 port, through the gate; `direct`: the
        server's own address on the infrastructure's network (the harness's reads)."""
        if direct:
            return f"http://{self.server.alias}:{PORT}"
        host, port = self.cluster.relay.service_client_address(SERVICE)
        return f"http://{host}:{port}"

    def hadoop_settings(self, direct: bool = False) -> dict[str, str]:
        """Spark's settings for Hadoop's S3A client (Delta's `s3a://` tables) to this server, through the gate;
        `direct`: at its own address (the harness's reads)."""
        return {f"spark.hadoop.fs.s3a.{key}": value for key, value in {
            "endpoint": self.endpoint(direct),
            "endpoint.region": REGION,
            "path.style.access": "true",
            "connection.ssl.enabled": "false",
            "access.key": self.server.access_key,
            "secret.key": self.server.secret_key,
            "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        }.items()}


def attached(cluster: Cluster) -> ObjectStore:
    """The cluster's S3 server, started by the first scenario that needs it."""
    return cluster.attached(SERVICE, ObjectStore)
