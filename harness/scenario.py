"""One scenario end to end on a running cluster: topics, workload, the pipeline's driver, the wait until
the whole input is consumed, the read_committed read, the verdict, and the logs."""

from __future__ import annotations

import importlib.util
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.checker import ExactlyOnceChecker, Verdict
from harness.checkpoint import CheckpointFolder
from harness.cluster.spark import SparkDriver
from harness.cluster.topology import Cluster
from harness.errors import BadInput, InfrastructureError, NotReady
from harness.progress import say
from harness.reader import CommittedReader, ReadResult
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


def check_pipeline(pipeline: str) -> None:
    """Fail early, as bad input, when the pipeline module does not exist in the repository."""
    try:
        found = importlib.util.find_spec(pipeline) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise BadInput(f"pipeline '{pipeline}' cannot be imported (no such module)")


class Scenario:
    """Composes the cluster, workload, driver, reader and checker for one run of a pipeline."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        pipeline: str = "fixtures.pipelines.passthrough",
        workload: Workload = Workload(20_000),
        partitions: int = 4,
        timeout: float = 300.0,
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.pipeline = pipeline
        self.workload = workload
        self.partitions = partitions
        self.timeout = timeout
        self.report_dir = run_report_dir(cluster.run_id) / name

    def run(self) -> ScenarioResult:
        check_pipeline(self.pipeline)
        seconds: dict[str, float] = {}
        kafka = self.cluster.kafka
        input_topic, output_topic = unique_name(self.name, "in"), unique_name(self.name, "out")
        create_topics(kafka.admin(), [input_topic, output_topic], self.partitions)

        started = time.monotonic()
        say(f"{self.name}: producing {self.workload.records} records to {input_topic}")
        sends = WorkloadProducer(kafka.bootstrap_direct).produce(input_topic, self.workload)
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
                "--pipeline", self.pipeline,
                "--bootstrap", kafka.bootstrap_chaos,
                "--input-topic", input_topic,
                "--output-topic", output_topic,
                "--checkpoint", checkpoint,
            ],
        )
        folder = CheckpointFolder(host_checkpoint)
        try:
            started = time.monotonic()
            self._start_driver(driver)
            seconds["driver_start"] = time.monotonic() - started
            started = time.monotonic()
            self._wait_until_consumed(folder, driver, input_topic, target)
            seconds["consume"] = time.monotonic() - started
        finally:
            driver.save_log(self.report_dir)
            driver.remove()

        started = time.monotonic()
        read = CommittedReader(kafka.bootstrap_direct).read(output_topic, count_uncommitted=True)
        verdict = ExactlyOnceChecker().check(sends.acked, read.records)
        seconds["read_and_check"] = time.monotonic() - started
        result = ScenarioResult(
            self.name, verdict, sends, read, folder.planned(), folder.committed(), seconds, self.report_dir
        )
        self._write_result(result)
        return result

    def _start_driver(self, driver: SparkDriver) -> None:
        try:
            driver.start()
        except NotReady as error:
            log = driver.log_text()
            failure = re.search(r"^\w*(ImportError|ModuleNotFoundError|AttributeError)[^\n]*", log, re.M)
            if failure:
                raise BadInput(f"pipeline '{self.pipeline}' failed to load in the driver: {failure.group(0)}") from None
            raise error

    def _wait_until_consumed(
        self, folder: CheckpointFolder, driver: SparkDriver, topic: str, target: dict[int, int]
    ) -> None:
        """Wait until a committed batch covers the whole input; progress every 5 s."""
        total = sum(target.values())
        deadline = time.monotonic() + self.timeout
        next_report = 0.0
        while True:
            consumed = folder.consumed(topic)
            done = sum(min(consumed.get(p, 0), end) for p, end in target.items())
            if all(consumed.get(p, 0) >= end for p, end in target.items()):
                say(f"{self.name}: input consumed ({total} records, {len(folder.committed())} batches)")
                return
            if time.monotonic() > next_report:
                say(f"{self.name}: consumed {done}/{total}, batches committed {len(folder.committed())}")
                next_report = time.monotonic() + 5
            if driver.status != "running":
                driver.reload()
                if driver.status != "running":
                    raise InfrastructureError(
                        f"{self.name}: the driver exited before consuming the input\n{driver.log_tail()}"
                    )
            if time.monotonic() > deadline:
                raise InfrastructureError(
                    f"{self.name}: input not consumed within {self.timeout:.0f} s ({done}/{total})\n{driver.log_tail()}"
                )
            time.sleep(0.5)

    def _write_result(self, result: ScenarioResult) -> None:
        self.report_dir.mkdir(parents=True, exist_ok=True)
        (self.report_dir / "result.json").write_text(
            json.dumps(
                {
                    "scenario": result.name,
                    "verdict": result.verdict.to_dict(),
                    "sends": {"acked": len(result.sends.acked), "failed": len(result.sends.failed),
                              "unknown": len(result.sends.unknown)},
                    "read": {"records": len(result.read.records), "stable": result.read.stable,
                             "high": result.read.high, "stuck": result.read.stuck, "aborted": result.read.aborted},
                    "batches": {"planned": result.batches_planned, "committed": result.batches_committed},
                    "seconds": result.seconds,
                },
                indent=2,
            )
        )
