"""The whole cluster on two Docker networks, one per role: started together, shared by scenarios, removed at
the end.

The system under test (the Spark master, workers and drivers) is on a network of its own, where it reaches
only the relay's client ports (the gate: Kafka and PostgreSQL, read and routed by the harness). The brokers'
listeners, toxiproxy and its API, PostgreSQL's own port and the relay's service port are on the
infrastructure's network, which the system under test is not attached to: a sink cannot re-enable a link
it was cut from, bypass the gate to a broker, or reach the harness's own service (docs/explanation/security.md).
The relay is on both; it binds its service port to its infrastructure address only."""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

from testcontainers.core.config import testcontainers_config
from testcontainers.core.network import Network

from harness.cluster import images, labels
from harness.cluster.brokers import KafkaCluster
from harness.cluster.dependency_volume import install
from harness.cluster.engine import docker_client, engine_host
from harness.cluster.flink import JOBMANAGER, TASKMANAGER_PREFIX
from harness.cluster.image_inputs import PACKAGE
from harness.cluster.kafka import CHAOS_PORT, DIRECT_PORT, INTERNAL_PORT
from harness.cluster.package_volume import package_volume
from harness.cluster.reaper import Reaper, reaper_engine
from harness.cluster.relay import VOLUME as RELAY_VOLUME
from harness.cluster.relay import Relay
from harness.cluster.service import Service
from harness.cluster.spark import CHECKPOINTS, SparkDriver, SparkMaster, SparkWorker, Submit
from harness.cluster.toxiproxy import API_PORT, ToxiproxyServer
from harness.driver.table_hold import HOLDS
from harness.errors import InfrastructureError
from harness.gate.points import Peer
from harness.gate.proxy import KafkaGate
from harness.gate.relay_files import RelayFiles
from harness.gate.tunnel import Tunnel
from harness.output.base import Hold
from harness.output.registry import stores
from harness.progress import say
from harness.settings import from_environment
from harness.versions import Stack

# One toxiproxy link per role and broker, so that one role's link, or every link to one broker, can be cut
# alone; and one per broker for replication (the other brokers fetch from it there), so that a leader's
# followers can be cut from it while the system under test still reaches it.
ROLES = ("driver", "executors")
REPLICATION = "replication"
ROLE_PREFIXES = {"driver-": "driver", "spark-worker-": "executors",
                 JOBMANAGER: "driver", TASKMANAGER_PREFIX: "executors"}  # Flink's (harness.cluster.flink_cluster)
DRIVER_MEMORY = "1500m"


def link_name(kind: str, broker: str) -> str:
    """A toxiproxy link's name: a role's (or replication's) route to one broker, e.g. executors-kafka-2."""
    return f"{kind}-{broker}"


def link_port(kind: str, node_id: int) -> int:
    """The link's port inside toxiproxy."""
    return 9100 + 10 * node_id + (ROLES.index(kind) if kind in ROLES else 9)


def service_link_port(index: int, role: str) -> int:
    """A role's link to the `index`th service a store started (PostgreSQL): its port inside toxiproxy
    (above every broker's)."""
    return 9300 + 10 * index + ROLES.index(role)


class Attachment(Protocol):
    """What a store starts on a cluster on first use (PostgreSQL): stopped with the cluster."""

    @property
    def services(self) -> list[Service]: ...


A = TypeVar("A", bound=Attachment)


class Cluster:
    """Kafka (KRaft), toxiproxy, a Spark master and workers; drivers come and go per scenario."""

    def __init__(self, workers: int = 2, run_id: str | None = None, brokers: int | None = None,
                 stack: Stack | None = None) -> None:
        """`stack`: the Kafka and Spark versions, else the ones this run asked for."""
        self.run_id = run_id or labels.new_run_id()
        testcontainers_config.tc_host_override = engine_host()  # where this process's engine publishes ports
        self.labels = labels.labels(self.run_id)
        self.images = images.current(stack)
        self.network = Network(docker_network_kw={"labels": self.labels})  # the infrastructure's
        # the system under test's: internal (no route out of it), so that the engine never takes it for the
        # relay's gateway, which its published port is forwarded to (the infrastructure's address, where
        # the relay's service port is bound)
        self.sut_network = Network(docker_network_kw={"labels": self.labels, "internal": True})
        self.package = f"{self.run_id}-package"  # the volume drivers and executors import the harness from
        self.checkpoints = f"{self.run_id}-checkpoints"  # the volume of every query's checkpoint, read via the relay
        self.dependencies = f"{self.run_id}-dependencies"  # the volume of the sinks' dependencies, installed on use
        self._installed: dict[str, str] = {}  # a bundle's digest -> its folder in that volume
        count = brokers if brokers is not None else from_environment("brokers")
        self.secret = secrets.token_hex(16)  # the run's: its relay and reaper obey only this process
        self.files: RelayFiles | None = None
        self.toxiproxy = ToxiproxyServer(self.images.toxiproxy.tag, self.network, self.labels)
        self.kafka = KafkaCluster(self.images.kafka.tag, self.network, self.labels, count,
                                  lambda n: f"{self.toxiproxy.alias}:{link_port(REPLICATION, n)}")
        self.relay = Relay(self.images.base.tag, self.network, self.labels, self.checkpoints, count, self.secret,
                           [self.toxiproxy.alias, *(broker.alias for broker in self.kafka.brokers),
                            *(alias for store in stores() for alias in store.aliases)])
        self.tunnels: list[Tunnel] = []  # toxiproxy's API, brokers' direct listeners, a store's: on the loopback
        self.gate: KafkaGate | None = None
        self.master = SparkMaster(self.images.spark.tag, self.sut_network, self.labels)
        self.workers = [
            SparkWorker(
                self.images.spark.tag, self.sut_network, self.labels, f"spark-worker-{n}", self.master,
                self.checkpoints, self.package, self.dependencies,
            ).with_memory_limit("1800m")
            for n in range(1, workers + 1)
        ]
        self.drivers: list[SparkDriver] = []
        self.attachments: dict[str, Attachment] = {}  # what stores started, by name (PostgreSQL)
        self.service_links: dict[str, str] = {}  # a service a store started -> its container's alias (links)
        self._attach_lock = threading.RLock()
        self.reaper: Reaper | None = None

    @property
    def services(self) -> list[Service]:
        return [*self.kafka.brokers, self.toxiproxy, self.relay, *self.engine_services,
                *(service for attachment in self.attachments.values() for service in attachment.services)]

    def start(self) -> Cluster:
        """Start every service in parallel where the dependencies allow; raise NotReady with logs."""
        started = time.monotonic()
        labels.sweep_leftovers()
        missing = images.missing(self.images.stack)
        if missing:
            raise InfrastructureError(
                "images missing: " + ", ".join(i.tag for i in missing) + "; run `python -m harness images build`"
            )
        say(f"starting the cluster (run {self.run_id}) ...")
        try:
            self.reaper = Reaper(self.images.base.tag, self.labels, reaper_engine(), self.secret).start()
            package_volume(self.package, PACKAGE, self.images.base.tag, self.labels)
            docker_client().volumes.create(self.checkpoints, labels=self.labels)
            docker_client().volumes.create(self.dependencies, labels=self.labels)
            self.network.create()
            self.sut_network.create()
            self.relay.start()
            self._share_the_volume_with_spark()
            self.sut_network.connect(self.relay.get_container_id(), network_aliases=[self.relay.alias])
            self.files = self.relay.files()
            self._tunnels()
            self.toxiproxy.start()
            self._links()
            self.gate = KafkaGate(self.relay.service_address, self.peer, self.link_address, self.secret).start()
            self.kafka.with_chaos_advertised(self.relay.client_address)
            with ThreadPoolExecutor(max_workers=4) as pool:
                spark = pool.submit(self._start_engine)
                kafka = pool.submit(self.kafka.start)
                for future in (kafka, spark):
                    future.result()
        except BaseException:
            self.stop()
            raise
        say(f"cluster ready in {time.monotonic() - started:.1f} s")
        return self

    def peer(self, address: str) -> Peer:
        """The container and role behind a source address, read afresh (containers come, go, move)."""
        endpoints = [endpoint for network in (self.sut_network, self.network)
                     for endpoint in docker_client().networks.get(network.id).attrs.get("Containers", {}).values()]
        for endpoint in endpoints:
            if endpoint["IPv4Address"].split("/")[0] == address:
                alias = endpoint["Name"].removeprefix(f"{self.run_id}-")
                role = next((r for prefix, r in ROLE_PREFIXES.items() if alias.startswith(prefix)), "other")
                return Peer(alias, role, address)
        raise InfrastructureError(f"no container of this run has address {address}")

    def _tunnels(self) -> None:
        """Open the harness's tunnels through the relay: what only it needs is reached so, never published."""
        api = self.relay.tunnel(self.toxiproxy.alias, API_PORT)
        self.tunnels.append(api)
        self.toxiproxy.with_api(api.address)
        for broker in self.kafka.brokers:
            direct = self.relay.tunnel(broker.alias, DIRECT_PORT)
            self.tunnels.append(direct)
            broker.with_direct_address(direct.address)

    def _links(self) -> None:
        """Every toxiproxy link: each role's to each broker's chaos listener, and (of several) each broker's
        replication listener."""
        for broker in self.kafka.brokers:
            for role in ROLES:
                self.toxiproxy.proxy(link_name(role, broker.alias), link_port(role, broker.node_id),
                                     f"{broker.alias}:{CHAOS_PORT}")
            if len(self.kafka.brokers) > 1:
                self.toxiproxy.proxy(link_name(REPLICATION, broker.alias), link_port(REPLICATION, broker.node_id),
                                     f"{broker.alias}:{INTERNAL_PORT}")

    def link_address(self, peer: Peer) -> tuple[str, int]:
        """Where the gate sends a peer's traffic: its role's toxiproxy link to the broker it asked for (or to
        PostgreSQL), on the run's network (the relay's tunnel reaches it)."""
        role = peer.role if peer.role in ROLES else "executors"
        if peer.service in self.service_links:
            return self.toxiproxy.alias, service_link_port(list(self.service_links).index(peer.service), role)
        return self.toxiproxy.alias, link_port(role, peer.broker)

    def service_link(self, service: str, role: str) -> str:
        """The name of a role's toxiproxy link to a service a store started; LookupError when the run has
        none of that service."""
        if service not in self.service_links:
            raise LookupError(f"this run has no {service}: no link to it to cut")
        return link_name(role, self.service_links[service])

    def link_service(self, service: str, alias: str, port: int) -> None:
        """A toxiproxy link per role to a service a store started (`service` as the gate names its peers:
        postgres), so that the gate sends its traffic by the sender's link and a partition can cut it."""
        with self._attach_lock:
            index = len(self.service_links)
            self.service_links[service] = alias
            for role in ROLES:
                self.toxiproxy.proxy(link_name(role, alias), service_link_port(index, role), f"{alias}:{port}")

    def attached(self, name: str, start: Callable[[Cluster], A]) -> A:
        """What a store starts on this cluster (`start(cluster)`), on first use, shared by later scenarios and
        removed with the cluster."""
        with self._attach_lock:
            if name not in self.attachments:
                self.attachments[name] = start(self)
            return self.attachments[name]  # type: ignore[return-value]

    @property
    def engine_services(self) -> list[Service]:
        """The engine's containers: Spark's master, workers and drivers."""
        return [self.master, *self.workers, *self.drivers]

    @property
    def executor_hosts(self) -> list[Service]:
        """The containers an executor fault aims into: Spark's workers, whose executors are their JVM's children."""
        return self.workers

    # whether an executor is its host's own JVM (a Flink TaskManager) rather than a child of it (Spark's)
    executor_is_host_jvm = False

    def _start_engine(self) -> None:
        self.master.start()
        with ThreadPoolExecutor(max_workers=max(len(self.workers), 1)) as pool:
            for future in [pool.submit(worker.start) for worker in self.workers]:
                future.result()

    def _share_the_volume_with_spark(self) -> None:
        """The checkpoint volume's root open to Spark's unprivileged user (its queries make their folders
        there) and sticky, with root's holds folder in it, which Spark's user can read but neither write,
        rename nor replace (harness.driver.table_hold); the relay, root, reads and writes both."""
        status, said = self.relay.output(["sh", "-c", f"chmod 1777 {RELAY_VOLUME} && "
                                          f"mkdir -p -m 0755 {RELAY_VOLUME}/{HOLDS.rpartition('/')[2]}"])
        if status != 0:
            raise InfrastructureError(f"the checkpoint volume could not be shared with Spark's user: {said.strip()}")

    def checkpoint(self, name: str) -> str:
        """A scenario's checkpoint folder, as the containers (and the relay) see it; Spark makes it."""
        return f"{CHECKPOINTS}/{name}"

    def install_dependencies(self, digest: str, wheels: list[Path], jars: list[Path]) -> str:
        """A sink's dependencies (the set `digest`: its wheels and jars) installed in this cluster's
        dependencies volume on first use, once for every later scenario; their folder in the containers."""
        with self._attach_lock:
            if digest not in self._installed:
                say(f"installing the sink's dependencies ({len(wheels)} wheels, {len(jars)} jars)")
                self._installed[digest] = install(self.dependencies, digest, wheels, jars, self.images.spark.tag,
                                                  self.labels)
            return self._installed[digest]

    def new_driver(self, name: str, app_args: list[str], submit: Submit = Submit(),
                   hold: Hold | None = None) -> SparkDriver:
        """A driver container (not yet started) for one Spark application (`hold`: the table commits it is
        held at)."""
        # executors resolve it by DNS, and Spark's URLs take no host name that ends with '-': cut, then strip
        hostname = re.sub(r"[^a-z0-9-]+", "-", name.lower())[:48].strip("-")
        driver = SparkDriver(
            self.images.spark.tag, self.sut_network, self.labels, f"driver-{hostname}", self.master,
            self.checkpoints, self.package, self.dependencies, app_args, submit, hold=hold,
        )
        driver.with_memory_limit(DRIVER_MEMORY)
        self.drivers.append(driver)
        return driver

    def remove_driver(self, driver: SparkDriver) -> None:
        driver.remove()
        if driver in self.drivers:
            self.drivers.remove(driver)

    def unhealthy(self) -> str | None:
        """After healing: a container paused, stopped, missing or disconnected, or a link disabled."""
        problems = [p for p in (service.health() for service in self.services) if p]
        for name, proxy in self.toxiproxy.client().proxies().items():
            if not proxy.enabled:
                problems.append(f"toxiproxy link {name} is disabled")
        if self.gate is not None and self.gate.open_holds():
            problems.append(f"{len(self.gate.open_holds())} gate holds still open")
        if not problems and len(self.kafka.brokers) > 1:
            behind = self.kafka.out_of_sync()
            if behind:
                problems.append(f"Kafka partitions out of sync: {', '.join(behind[:5])}")
        return "; ".join(problems) or None

    def save_logs(self, folder: Path) -> None:
        """Every container's log into `folder`."""
        for service in self.services:
            service.save_log(folder)

    def stop(self) -> None:
        """Remove every container, volume and the network of this run."""
        if self.gate is not None:
            self.gate.stop()
        if self.files is not None:
            self.files.close()
        for tunnel in self.tunnels:
            tunnel.close()
        self.tunnels.clear()
        labels.remove_run(self.run_id)
        if self.reaper is not None:
            self.reaper.release()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
