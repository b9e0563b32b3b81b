"""One scenario of a Flink job (`--engine flink`): Spark's scenario (harness.run.scenario) with Flink's system
under test in place of Spark's. The topics, the workload, the gate's points, the nemesis, the read_committed
read and the checks are the same; the job is submitted to the session cluster (harness.run.flink_supervisor),
its checkpoints are its batches (harness.run.flink_checkpoints) and its JobManager is the driver's role."""

from __future__ import annotations

import json

from harness.client.scenario_input import ScenarioInput
from harness.cluster.flink import FLINK_CHECKPOINTS, PARALLELISM
from harness.cluster.flink_cluster import FlinkCluster
from harness.driver.flink_context import FlinkJobContext
from harness.output.base import Place
from harness.output.registry import store
from harness.run.checkpoint import BatchWatcher
from harness.run.checkpoint_window import missed_in_flight
from harness.run.flink_checkpoints import FlinkCheckpoints
from harness.run.flink_supervisor import JobSupervisor
from harness.run.scenario import Scenario
from harness.run.shipping import ship
from harness.run.system import Faults, System, Topics

WATCH_INTERVAL_S = 0.05  # a checkpoint is in flight a few hundred ms: its trigger is seen within this


class FlinkScenario(Scenario):
    """A Flink job's scenario: `sink` is the job (harness.catalog.jobs), `pipeline` the one whose model judges
    what it writes."""

    cluster: FlinkCluster
    engine = "flink"

    def _system(self, topics: Topics, input_: ScenarioInput) -> System:
        files = self.cluster.files
        assert files is not None
        output = store(self.output).output(Place(self.cluster, files, self.cluster.kafka.bootstrap_direct,
                                                 topics.output, FLINK_CHECKPOINTS, self.name, False))
        output.prepare()
        suffix = topics.output[-12:]
        context = FlinkJobContext(self.cluster.kafka.bootstrap_chaos, topics.input, topics.output,
                                  f"{self.name}-{suffix}", f"{self.name}-{suffix}", self.name)
        args = [self.sink.argument, json.dumps(vars(context))]
        if self.sink.shipped:
            args.append(ship(self.sink, files, f"{FLINK_CHECKPOINTS}/{self.name}"))
        supervisor = JobSupervisor(self.cluster, self.name, args, self.history, self.report_dir / "logs",
                                   self.sink.spec, PARALLELISM)
        folder = FlinkCheckpoints(files, FLINK_CHECKPOINTS, supervisor.job_ids, self.cluster.kafka.bootstrap_direct,
                                  context.group_id)
        supervisor.checkpoints = folder
        watcher = BatchWatcher(folder, self.history, interval=WATCH_INTERVAL_S)
        return System(input_, output, None, folder, watcher, supervisor)  # type: ignore[arg-type]

    def _consume(self, system: System, faults: Faults, input_topic: str, seconds: dict[str, float]) -> dict | None:
        """Spark's, then whether each fault at a checkpoint's trigger took effect while it was in flight."""
        incomplete = super()._consume(system, faults, input_topic, seconds)
        missed_in_flight(self.history, system.folder)  # type: ignore[arg-type]
        return incomplete
