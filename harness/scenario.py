"""One scenario end to end on a running cluster: topics, workload, the pipeline's driver, the wait until
the whole input is consumed, the read_committed read, the verdict, the history and the report."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.checker import Verdict, check
from harness.checkpoint import BatchWatcher, CheckpointFolder
from harness.cluster.spark import SparkDriver
from harness.cluster.topology import Cluster
from harness.errors import BadInput, InfrastructureError, NotReady
from harness.history import History
from harness.pipeline import Pipeline, load_pipeline
from harness.progress import say
from harness.reader import CommittedReader, ReadResult
from harness.report import write_scenario_page
from harness.topics import create_topics, end_offsets, unique_name
from harness.workload import SendLog, Workload, WorkloadProducer

REPORTS = Path(__file__).resolve().parents[1] / "reports"


def run_report_dir(run_id: str) -> Path:
    """`reports/<run>/`: one folder per run, one sub-folder per scenario."""
    return REPORTS / run_id


@dataclass
class ScenarioResult:
    """What a scenario observed, with the verdict."""

    name: str
    verdict: Verdict
    sends: SendLog
    read: ReadResult
    batches_planned: list[int]
    batches_committed: list[int]
    seconds: dict[str, float] = field(default_factory=dict)
    report_dir: Path | None = None

    def to_dict(self) -> dict:
        return {
            "scenario": self.name,
            "verdict": self.verdict.to_dict(),
            "sends": {"acked": len(self.sends.acked), "failed": len(self.sends.failed),
                      "unknown": len(self.sends.unknown)},
            "read": {"records": len(self.read.records), "stable": self.read.stable, "high": self.read.high,
                     "stuck": self.read.stuck, "aborted": self.read.aborted,
                     "open_transactions": self.read.open_transactions},
            "batches": {"planned": self.batches_planned, "committed": self.batches_committed},
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
        }


class Scenario:
    """Composes the cluster, workload, driver, reader and checkers for one run of a pipeline."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        pipeline: str = "fixtures.pipelines.passthrough",
        workload: Workload = Workload(20_000),
        partitions: int = 4,
        timeout: float = 300.0,
        max_offsets_per_trigger: int = 2_000,
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.pipeline: Pipeline = load_pipeline(pipeline)
        self.workload = workload
        self.partitions = partitions
        self.timeout = timeout
        self.max_offsets_per_trigger = max_offsets_per_trigger
        self.report_dir = run_report_dir(cluster.run_id) / name
        self.history = History(self.report_dir / "history.jsonl")

    def run(self) -> ScenarioResult:
        try:
            result = self._run()
        finally:
            self.history.close()
        write_scenario_page(self.report_dir, result.to_dict(), result.read.records)
        return result

    def _run(self) -> ScenarioResult:
        seconds: dict[str, float] = {}
        kafka = self.cluster.kafka
        input_topic, output_topic = unique_name(self.name, "in"), unique_name(self.name, "out")
        create_topics(kafka.admin(), [input_topic, output_topic], self.partitions)
        self.history.record("scenario.start", scenario=self.name, pipeline=self.pipeline.name,
                            input_topic=input_topic, output_topic=output_topic, workload=vars(self.workload))

        started = time.monotonic()
        say(f"{self.name}: producing {self.workload.records} records to {input_topic}")
        sends = WorkloadProducer(kafka.bootstrap_direct).produce(input_topic, self.workload, history=self.history)
        seconds["produce"] = time.monotonic() - started
        if sends.failed or sends.unknown:
            raise InfrastructureError(
                f"{self.name}: {len(sends.failed)} sends failed, {len(sends.unknown)} unknown; input incomplete"
            )
        target = end_offsets(kafka.bootstrap_direct, input_topic, self.partitions)

        host_checkpoint, checkpoint = self.cluster.checkpoint(self.name)
        driver = self.cluster.new_driver(
            self.name,
            [
                "--pipeline", self.pipeline.name,
                "--bootstrap", kafka.bootstrap_chaos,
                "--input-topic", input_topic,
                "--output-topic", output_topic,
                "--checkpoint", checkpoint,
                "--max-offsets-per-trigger", str(self.max_offsets_per_trigger),
            ],
        )
        folder = CheckpointFolder(host_checkpoint)
        watcher = BatchWatcher(folder, self.history).start()
        incomplete = None
        try:
            started = time.monotonic()
            self._start_driver(driver)
            seconds["driver_start"] = time.monotonic() - started
            started = time.monotonic()
            incomplete = self._wait_until_consumed(folder, driver, input_topic, target)
            seconds["consume"] = time.monotonic() - started
        finally:
            watcher.stop()
            driver.save_log(self.report_dir / "logs")
            driver.remove()
            self.history.record("container.remove", container=driver.alias)

        started = time.monotonic()
        read = CommittedReader(kafka.bootstrap_direct).read(output_topic, count_uncommitted=True)
        if read.stuck:
            read.open_transactions = self.cluster.kafka.open_transactions()
        self.history.record("read", records=len(read.records), stuck=read.stuck, aborted=read.aborted)
        expected = self.pipeline.model(json.loads(r.to_json()) for r in self.workload.generate() if r.id in sends.acked)
        verdict = check(self.pipeline.checkers(), expected, read, self.pipeline.identity, incomplete)
        seconds["read_and_check"] = time.monotonic() - started
        self.history.record("verdict", **verdict.to_dict())
        result = ScenarioResult(
            self.name, verdict, sends, read, folder.planned(), folder.committed(), seconds, self.report_dir
        )
        (self.report_dir / "result.json").write_text(json.dumps(result.to_dict(), indent=2))
        return result

    def _start_driver(self, driver: SparkDriver) -> None:
        try:
            driver.start()
        except NotReady as error:
            log = driver.log_text()
            failure = re.search(r"^\w*(ImportError|ModuleNotFoundError|AttributeError)[^\n]*", log, re.M)
            if failure:
                raise BadInput(
                    f"pipeline '{self.pipeline.name}' failed to load in the driver: {failure.group(0)}"
                ) from None
            raise error
        self.history.record("container.start", container=driver.alias, role="driver")

    def _wait_until_consumed(
        self, folder: CheckpointFolder, driver: SparkDriver, topic: str, target: dict[int, int]
    ) -> str | None:
        """Wait until a committed batch covers the whole input; progress every 5 s.

        Returns None when it did, or why not (`incomplete`): the deadline passed or the driver died.
        """
        total = sum(target.values())
        deadline = time.monotonic() + self.timeout
        next_report = 0.0
        while True:
            consumed = folder.consumed(topic)
            done = sum(min(consumed.get(p, 0), end) for p, end in target.items())
            if all(consumed.get(p, 0) >= end for p, end in target.items()):
                say(f"{self.name}: input consumed ({total} records, {len(folder.committed())} batches)")
                return None
            if time.monotonic() > next_report:
                say(f"{self.name}: consumed {done}/{total}, batches committed {len(folder.committed())}")
                next_report = time.monotonic() + 5
            driver.reload()
            if driver.status != "running":
                reason = f"the driver exited ({done}/{total} consumed): {driver.log_tail(5)}"
                self.history.record("incomplete", reason=reason)
                return reason
            if time.monotonic() > deadline:
                reason = f"input not consumed within {self.timeout:.0f} s ({done}/{total})"
                self.history.record("incomplete", reason=reason)
                return reason
            time.sleep(0.5)
