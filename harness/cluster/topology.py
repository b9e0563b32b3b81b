"""The whole cluster on one Docker network: started together, shared by scenarios, removed at the end."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testcontainers.core.config import testcontainers_config
from testcontainers.core.network import Network

from harness.cluster import images, labels
from harness.cluster.engine import docker_client, engine_host
from harness.cluster.kafka import CHAOS_PORT, KafkaBroker
from harness.cluster.package_volume import package_volume
from harness.cluster.reaper import Reaper, reaper_engine
from harness.cluster.relay import Relay
from harness.cluster.service import Service
from harness.cluster.spark import CHECKPOINTS, SparkDriver, SparkMaster, SparkWorker
from harness.cluster.toxiproxy import ToxiproxyServer
from harness.errors import InfrastructureError
from harness.gate.proxy import KafkaGate, Peer
from harness.gate.relay_files import RelayFiles
from harness.progress import say

# One toxiproxy link per role, so a role's link can be cut alone: role -> port inside toxiproxy.
LINKS = {"driver": 9101, "executors": 9102}
ROLE_PREFIXES = {"driver-": "driver", "spark-worker-": "executors"}
DRIVER_MEMORY = "1500m"


class Cluster:
    """Kafka (KRaft), toxiproxy, a Spark master and workers; drivers come and go per scenario."""

    def __init__(self, workers: int = 2, run_id: str | None = None) -> None:
        self.run_id = run_id or labels.new_run_id()
        testcontainers_config.tc_host_override = engine_host()  # where this process's engine publishes ports
        self.labels = labels.labels(self.run_id)
        self.images = images.current()
        self.network = Network(docker_network_kw={"labels": self.labels})
        self.package = f"{self.run_id}-package"  # the volume drivers and executors import the harness from
        self.checkpoints = f"{self.run_id}-checkpoints"  # the volume of every query's checkpoint, read via the relay
        self.relay = Relay(self.images.base.tag, self.network, self.labels, self.checkpoints)
        self.files: RelayFiles | None = None
        self.kafka = KafkaBroker(self.images.kafka.tag, self.network, self.labels)
        self.toxiproxy = ToxiproxyServer(self.images.toxiproxy.tag, self.network, self.labels)
        for port in LINKS.values():
            self.toxiproxy.with_published_port(port)
        self.gate: KafkaGate | None = None
        self.master = SparkMaster(self.images.spark.tag, self.network, self.labels)
        self.workers = [
            SparkWorker(
                self.images.spark.tag, self.network, self.labels, f"spark-worker-{n}", self.master,
                self.checkpoints, self.package,
            ).with_memory_limit("1800m")
            for n in range(1, workers + 1)
        ]
        self.drivers: list[SparkDriver] = []
        self.reaper: Reaper | None = None

    @property
    def services(self) -> list[Service]:
        return [self.kafka, self.toxiproxy, self.relay, self.master, *self.workers, *self.drivers]

    def start(self) -> Cluster:
        """Start every service in parallel where the dependencies allow; raise NotReady with logs."""
        started = time.monotonic()
        labels.sweep_leftovers()
        missing = images.missing()
        if missing:
            raise InfrastructureError(
                "images missing: " + ", ".join(i.tag for i in missing) + "; run `python -m harness images build`"
            )
        say(f"starting the cluster (run {self.run_id}) ...")
        engine = reaper_engine()
        try:
            if engine is None:
                say("no reaper for an engine over TLS: a killed run is removed by the next run's sweep")
            else:
                self.reaper = Reaper(self.images.base.tag, self.labels, engine).start()
            package_volume(self.package, images.PACKAGE, self.images.base.tag, self.labels)
            docker_client().volumes.create(self.checkpoints, labels=self.labels)
            self.network.create()
            self.toxiproxy.start()
            self.relay.start()
            self.files = self.relay.files()
            self.gate = KafkaGate(self.relay.service_address, self.peer, self.link_address).start()
            self.kafka.with_chaos_advertised(self.relay.client_address)
            with ThreadPoolExecutor(max_workers=4) as pool:
                spark = pool.submit(self._start_spark)
                broker = pool.submit(self.kafka.start)
                for future in (broker, spark):
                    future.result()
            for role, port in LINKS.items():
                self.toxiproxy.proxy(role, port, f"{self.kafka.alias}:{CHAOS_PORT}")
        except BaseException:
            self.stop()
            raise
        say(f"cluster ready in {time.monotonic() - started:.1f} s")
        return self

    def peer(self, address: str) -> Peer:
        """The container and role behind a source address, read afresh (containers come, go, move)."""
        attrs = docker_client().networks.get(self.network.id).attrs
        for endpoint in attrs.get("Containers", {}).values():
            if endpoint["IPv4Address"].split("/")[0] == address:
                alias = endpoint["Name"].removeprefix(f"{self.run_id}-")
                role = next((r for prefix, r in ROLE_PREFIXES.items() if alias.startswith(prefix)), "other")
                return Peer(alias, role, address)
        raise InfrastructureError(f"no container of this run has address {address}")

    def link_address(self, peer: Peer) -> tuple[str, int]:
        """Where the gate sends a peer's traffic: its role's toxiproxy link, as published."""
        return self.toxiproxy.reached_at(LINKS.get(peer.role, LINKS["executors"]))

    def _start_spark(self) -> None:
        self.master.start()
        with ThreadPoolExecutor(max_workers=max(len(self.workers), 1)) as pool:
            for future in [pool.submit(worker.start) for worker in self.workers]:
                future.result()

    def checkpoint(self, name: str) -> str:
        """A scenario's checkpoint folder, as the containers (and the relay) see it; Spark makes it."""
        return f"{CHECKPOINTS}/{name}"

    def new_driver(self, name: str, app_args: list[str]) -> SparkDriver:
        """A driver container (not yet started) for one Spark application."""
        # executors resolve it by DNS, and Spark's URLs take no host name that ends with '-': cut, then strip
        hostname = re.sub(r"[^a-z0-9-]+", "-", name.lower())[:48].strip("-")
        driver = SparkDriver(
            self.images.spark.tag, self.network, self.labels, f"driver-{hostname}", self.master,
            self.checkpoints, self.package, app_args,
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
        labels.remove_run(self.run_id)
        if self.reaper is not None:
            self.reaper.release()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
