"""The whole cluster on one Docker network: started together, shared by scenarios, removed at the end."""

from __future__ import annotations

import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from testcontainers.core.network import Network

from harness.cluster import images, labels
from harness.cluster.kafka import CHAOS_PORT, KafkaBroker
from harness.cluster.service import Service
from harness.cluster.spark import CHECKPOINTS, SparkDriver, SparkMaster, SparkWorker
from harness.cluster.toxiproxy import ToxiproxyServer
from harness.errors import InfrastructureError
from harness.progress import say

REPO = images.REPO
CHAOS_PROXY = "kafka-chaos"


class Cluster:
    """Kafka (KRaft), toxiproxy, a Spark master and workers; drivers come and go per scenario."""

    def __init__(self, workers: int = 2, run_id: str | None = None) -> None:
        self.run_id = run_id or labels.new_run_id()
        self.labels = labels.labels(self.run_id)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"eo-harness-{self.run_id}-"))
        self.checkpoints = self.workdir / "checkpoints"
        self.checkpoints.mkdir()
        self.network = Network(docker_network_kw={"labels": self.labels})
        self.kafka = KafkaBroker(images.KAFKA.tag, self.network, self.labels)
        self.toxiproxy = ToxiproxyServer(images.TOXIPROXY.tag, self.network, self.labels)
        self.kafka.with_chaos_advertised(f"{self.toxiproxy.alias}:{CHAOS_PORT}")
        self.master = SparkMaster(images.SPARK.tag, self.network, self.labels)
        self.workers = [
            SparkWorker(
                images.SPARK.tag, self.network, self.labels, f"spark-worker-{n}", self.master,
                self.checkpoints, REPO,
            ).with_memory_limit("1800m")
            for n in range(1, workers + 1)
        ]
        self.drivers: list[SparkDriver] = []

    @property
    def services(self) -> list[Service]:
        return [self.kafka, self.toxiproxy, self.master, *self.workers, *self.drivers]

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
        self.network.create()
        try:
            with ThreadPoolExecutor(max_workers=4) as pool:
                spark = pool.submit(self._start_spark)
                broker = pool.submit(self.kafka.start)
                proxy = pool.submit(self.toxiproxy.start)
                for future in (proxy, broker, spark):
                    future.result()
            self.toxiproxy.proxy(CHAOS_PROXY, CHAOS_PORT, f"{self.kafka.alias}:{CHAOS_PORT}")
        except BaseException:
            self.stop()
            raise
        say(f"cluster ready in {time.monotonic() - started:.1f} s")
        return self

    def _start_spark(self) -> None:
        self.master.start()
        with ThreadPoolExecutor(max_workers=len(self.workers)) as pool:
            for future in [pool.submit(worker.start) for worker in self.workers]:
                future.result()

    def checkpoint(self, name: str) -> tuple[Path, str]:
        """A fresh checkpoint folder: its path on the host and inside the containers."""
        host = self.checkpoints / name
        host.mkdir(parents=True)
        return host, f"{CHECKPOINTS}/{name}"

    def new_driver(self, name: str, app_args: list[str]) -> SparkDriver:
        """A driver container (not yet started) for one Spark application."""
        driver = SparkDriver(
            images.SPARK.tag, self.network, self.labels, f"driver-{name}", self.master,
            self.checkpoints, REPO, app_args,
        ).with_memory_limit("1500m")
        self.drivers.append(driver)
        return driver

    def save_logs(self, folder: Path) -> None:
        """Every container's log into `folder`."""
        for service in self.services:
            service.save_log(folder)

    def stop(self) -> None:
        """Remove every container and the network of this run, and the host work folder."""
        labels.remove_run(self.run_id)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
