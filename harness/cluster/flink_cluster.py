"""The cluster with Flink as its engine: the same Kafka, toxiproxy, relay and gate as Spark's
(harness.cluster.topology), with a Flink session cluster on the system under test's network in place of
Spark's master and workers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from harness.cluster import images
from harness.cluster.flink import FlinkJobManager, FlinkTaskManager
from harness.cluster.service import Service
from harness.cluster.topology import Cluster
from harness.errors import InfrastructureError
from harness.versions import Stack

TASKMANAGERS = 2
TASKMANAGER_MEMORY = "1600m"  # the container's cap, above the JVM's process size (harness.cluster.flink)
JOBMANAGER_MEMORY = "1400m"


class FlinkCluster(Cluster):
    """Kafka, toxiproxy, the gate and a Flink session cluster; jobs come and go per scenario, and a lost
    JobManager is replaced by the scenario's supervisor (harness.run.flink_supervisor)."""

    def __init__(self, run_id: str | None = None, brokers: int | None = None, stack: Stack | None = None,
                 taskmanagers: int = TASKMANAGERS) -> None:
        super().__init__(workers=0, run_id=run_id, brokers=brokers, stack=stack)
        self.flink_image = images.flink_image(self.images.stack.flink)
        self.jobmanager = self.new_jobmanager()
        self.taskmanagers = [
            FlinkTaskManager(self.flink_image.tag, self.sut_network, self.labels, n, self.checkpoints, self.package)
            .with_memory_limit(TASKMANAGER_MEMORY)
            for n in range(1, taskmanagers + 1)
        ]

    def new_jobmanager(self) -> FlinkJobManager:
        """A JobManager container, not yet started (the first, or one in place of a lost one)."""
        manager = FlinkJobManager(self.flink_image.tag, self.sut_network, self.labels, self.checkpoints, self.package)
        manager.with_memory_limit(JOBMANAGER_MEMORY)
        return manager

    @property
    def engine_services(self) -> list[Service]:
        return [self.jobmanager, *self.taskmanagers]

    @property
    def executor_hosts(self) -> list[Service]:
        """The TaskManagers: each runs its tasks in its own JVM, which the executor faults aim at."""
        return list(self.taskmanagers)

    executor_is_host_jvm = True

    def start(self) -> FlinkCluster:
        if not images.present(self.flink_image):
            raise InfrastructureError(f"image missing: {self.flink_image.tag}; run `python -m harness images build`")
        super().start()
        return self

    def _start_engine(self) -> None:
        self.jobmanager.start()
        with ThreadPoolExecutor(max_workers=len(self.taskmanagers)) as pool:
            for future in [pool.submit(manager.start) for manager in self.taskmanagers]:
                future.result()
