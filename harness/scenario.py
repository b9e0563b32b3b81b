"""One scenario end to end on a running cluster: topics, workload, the pipeline's driver, the wait until
the whole input is consumed, the read_committed read, the verdict, the history and the report."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.checker import FAIL, UNKNOWN, Anomaly, OutputCheck, Verdict
from harness.checkpoint import BatchWatcher, CheckpointFolder
from harness.cluster.spark import SparkDriver
from harness.cluster.topology import Cluster
from harness.errors import BadInput, InfrastructureError, NotReady
from harness.faults.nemesis import Nemesis
from harness.faults.spec import FaultStep
from harness.gate.proxy import Observe
from harness.history import History, read_history
from harness.pipeline import Pipeline, load_pipeline
from harness.progress import say
from harness.reader import CommittedReader, ReadResult, in_produce_order
from harness.report import write_scenario_page
from harness.schedule import Schedule
from harness.sink_spec import SinkSpec, resolve_sink
from harness.state_stores import STATE_STORES
from harness.topics import create_topics, end_offsets, unique_name
from harness.workload import SendLog, Workload, WorkloadProducer

REPORTS = Path(__file__).resolve().parents[1] / "reports"
SETTLE_SECONDS = 4.0  # quiet after the last batch before a stateful query counts as done (triggers are 1 s)


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
    stateful: bool = False  # the query kept state (seen in its checkpoint)

    def events(self, *types: str) -> list[dict]:
        """Events of the scenario's history, of the given types (all when none are given)."""
        assert self.report_dir is not None
        events = read_history(self.report_dir / "history.jsonl")
        return [e for e in events if not types or e["type"] in types]

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
            "stateful": self.stateful,
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
        }


class Scenario:
    """Composes the cluster, workload, driver, schedule, nemesis, reader and checkers for one run."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        pipeline: str = "fixtures.pipelines.passthrough",
        sink: str | SinkSpec = "fixtures.sinks.builtin_kafka",
        faults: list[FaultStep] | None = None,
        workload: Workload = Workload(20_000),
        partitions: int = 4,
        stall_timeout: float = 180.0,
        max_offsets_per_trigger: int = 2_000,
        state_store: str = "hdfs",
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.pipeline: Pipeline = load_pipeline(pipeline)
        self.sink = sink if isinstance(sink, SinkSpec) else resolve_sink(sink)
        self.faults = faults or []
        self.workload = self.pipeline.workload(workload)
        self.partitions = partitions
        self.stall_timeout = stall_timeout
        self.max_offsets_per_trigger = max_offsets_per_trigger
        if state_store not in STATE_STORES:
            raise BadInput(f"state store '{state_store}': one of {', '.join(STATE_STORES)}")
        self.state_store = state_store
        self.report_dir = run_report_dir(cluster.run_id) / name
        self.history = History(self.report_dir / "history.jsonl")
        self.driver: SparkDriver | None = None
        self._driver_args: list[str] = []
        self._restarts = 0
        self._restarting = threading.Event()

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
        marker_topic = unique_name(self.name, "markers")
        create_topics(kafka.admin(), [input_topic, output_topic, marker_topic], self.partitions)
        self.history.record("scenario.start", scenario=self.name, pipeline=self.pipeline.name, sink=self.sink.spec,
                            faults=[str(f) for f in self.faults], state_store=self.state_store,
                            input_topic=input_topic,
                            output_topic=output_topic, workload=vars(self.workload))

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
        self._driver_args = [
            "--pipeline", self.pipeline.name,
            "--bootstrap", kafka.bootstrap_chaos,
            "--input-topic", input_topic,
            "--output-topic", output_topic,
            "--checkpoint", checkpoint,
            "--max-offsets-per-trigger", str(self.max_offsets_per_trigger),
            "--sink", self.sink.argument,
            "--sink-id", f"{self.name}-{output_topic[-12:]}",
            "--marker-topic", marker_topic,
            "--state-store", self.state_store,
        ]
        if self.sink.shipped:
            self._driver_args += ["--sink-file", self._ship_sink(host_checkpoint, checkpoint)]
        folder = CheckpointFolder(host_checkpoint)
        watcher = BatchWatcher(folder, self.history)
        nemesis = Nemesis(self.cluster, self.history, self._current_driver, self._replace_driver)
        schedule = Schedule(self.faults, nemesis, self.history)
        gate = self.cluster.gate
        assert gate is not None
        gate.record, gate.interceptor = self.history.record, schedule
        watcher.listeners.append(schedule.on_batch)
        watcher.start()
        incomplete = None
        try:
            started = time.monotonic()
            self.driver = self.cluster.new_driver(self.name, self._driver_args)
            self._start_driver(self.driver)
            schedule.start_clock()
            seconds["driver_start"] = time.monotonic() - started
            started = time.monotonic()
            incomplete = self._wait_until_consumed(folder, input_topic, target, schedule)
            seconds["consume"] = time.monotonic() - started
        finally:
            gate.interceptor, gate.record = Observe(), _ignore
            schedule.close()
            nemesis.heal_all()
            nemesis.close()
            watcher.stop()
            if self.driver is not None:
                self._retire_driver(self.driver)
        unhealthy = self.cluster.unhealthy()
        if unhealthy:
            raise InfrastructureError(f"{self.name}: after healing, {unhealthy}")

        started = time.monotonic()
        expected = self.pipeline.model(json.loads(r.to_json()) for r in self.workload.generate() if r.id in sends.acked)
        required = self._consumed_results(folder, input_topic) if incomplete else None
        output_check = OutputCheck(self.pipeline.checkers(), expected, self.pipeline.identity, required)
        read = CommittedReader(kafka.bootstrap_direct).read(output_topic, count_uncommitted=True,
                                                            on_batch=output_check.feed)
        self.history.record("read", records=len(read.records), stuck=read.stuck, aborted=read.aborted)
        verdict = output_check.verdict(read, incomplete)
        unfired = schedule.unfired()
        if unfired and verdict.outcome != UNKNOWN:
            verdict.outcome = FAIL
            vacuous = verdict.anomalies.setdefault("vacuous", Anomaly("vacuous"))
            for step in unfired:
                vacuous.add({"fault": str(step), "reason": "fault never fired: its trigger point was not reached"})
        seconds["read_and_check"] = time.monotonic() - started
        self.history.record("verdict", **verdict.to_dict())
        result = ScenarioResult(
            self.name, verdict, sends, read, folder.planned(), folder.committed(), seconds, self.report_dir,
            folder.stateful(),
        )
        (self.report_dir / "result.json").write_text(json.dumps(result.to_dict(), indent=2))
        return result

    def _consumed_results(self, folder: CheckpointFolder, input_topic: str) -> set[str]:
        """The results the model expects of the input the checkpoint says was consumed: in an incomplete
        run only their absence is a loss (the rest of the input was never reached). A stateful query
        emits what a batch's input closes (a window the watermark passed) in the batch after it, so
        there the input of all committed batches but the last counts."""
        consumed = folder.consumed(input_topic, lag=1 if folder.stateful() else 0)
        inputs = in_produce_order(CommittedReader(self.cluster.kafka.bootstrap_direct).read(input_topic).records)
        expected = self.pipeline.model(
            json.loads(r.value()) for r in inputs if r.offset() < consumed.get(r.partition(), 0)
        )
        return {identity for identity, want in expected.items() if want.required}

    def _ship_sink(self, host_checkpoint: Path, checkpoint: str) -> str:
        """Copy a sink file from outside the repository next to the checkpoint (the driver sees it there)."""
        folder = host_checkpoint.parent / f"{host_checkpoint.name}-sink"
        folder.mkdir()
        shutil.copy2(self.sink.source, folder / self.sink.source.name)
        return f"{checkpoint}-sink/{self.sink.source.name}"

    def _current_driver(self) -> SparkDriver:
        assert self.driver is not None
        return self.driver

    def _start_driver(self, driver: SparkDriver) -> None:
        try:
            driver.start()
        except NotReady as error:
            log = driver.log_text()
            sink_error = re.search(r"^HARNESS-SINK-ERROR (.*)$", log, re.M)
            if sink_error:
                raise BadInput(f"sink '{self.sink.spec}' failed at start: {sink_error.group(1)}") from None
            failure = re.search(r"^\w*(ImportError|ModuleNotFoundError|AttributeError)[^\n]*", log, re.M)
            if failure:
                raise BadInput(
                    f"pipeline '{self.pipeline.name}' or sink '{self.sink.spec}' failed to load in the driver: "
                    f"{failure.group(0)}"
                ) from None
            raise error
        self.history.record("container.start", container=driver.alias, role="driver", restart=self._restarts)

    def _retire_driver(self, driver: SparkDriver) -> None:
        suffix = f".{self._restarts}" if self._restarts else ""
        driver.save_log(self.report_dir / "logs", f"{driver.alias}{suffix}.log")
        self.cluster.remove_driver(driver)
        self.history.record("container.remove", container=driver.alias)

    def _replace_driver(self, kill: Callable[[], None]) -> None:
        """Kill the driver and start a new spark-submit on the same checkpoint (called by the nemesis)."""
        self._restarting.set()
        try:
            kill()
            assert self.driver is not None
            self._retire_driver(self.driver)
            self._restarts += 1
            self.driver = self.cluster.new_driver(self.name, self._driver_args)
            self._start_driver(self.driver)
        finally:
            self._restarting.clear()

    def _wait_until_consumed(
        self, folder: CheckpointFolder, topic: str, target: dict[int, int], schedule: Schedule
    ) -> dict | None:
        """Phase 1: until the input is consumed and every fault fired (or the input ran out first).
        Phase 2: wait for faults in progress, heal everything, and wait until the input is consumed.

        Returns None when it was, or why not (`incomplete`, with the progress made): the run went
        `stall_timeout` s without progress, or the driver died. There is no fixed deadline: a larger
        workload takes longer, and only a run that stopped moving is cut short.
        """
        reason = self._wait(folder, topic, target, schedule, lambda: schedule.all_fired)
        if reason is None:
            schedule.close()
            schedule.nemesis.heal_all()
            reason = self._wait(folder, topic, target, schedule, lambda: True)
        if reason is not None:
            self.history.record("incomplete", **reason)
        return reason

    def _wait(
        self, folder: CheckpointFolder, topic: str, target: dict[int, int], schedule: Schedule,
        faults_done: Callable[[], bool],
    ) -> dict | None:
        total = sum(target.values())
        started = moved = batches_moved = time.monotonic()
        last_seen: tuple[int, ...] = ()
        last_batches = (0, 0)
        next_report = 0.0
        while True:
            now = time.monotonic()
            consumed = folder.consumed(topic)
            done = sum(min(consumed.get(p, 0), end) for p, end in target.items())
            batches = (len(folder.planned()), len(folder.committed()))
            if batches != last_batches:
                last_batches, batches_moved = batches, now
            # a stateful query emits its last results in a batch of no data, once the watermark moved:
            # its input is consumed only when no batch is planned or running for a few triggers
            settled = not folder.stateful() or (batches[0] == batches[1] and now - batches_moved >= SETTLE_SECONDS)
            finished = settled and all(consumed.get(p, 0) >= end for p, end in target.items())
            seen = (done, batches[0], len(schedule.fired), self._restarts)
            if seen != last_seen or finished or self._restarting.is_set():
                last_seen, moved = seen, now  # progress: input consumed, a batch planned, a fault, a restart
            if finished and not self._restarting.is_set():
                if faults_done() or not self._stream_can_still_trigger(schedule):
                    say(f"{self.name}: input consumed ({total} records, {len(folder.committed())} batches)")
                    return None
            if now > next_report:
                say(f"{self.name}: consumed {done}/{total}, batches committed {len(folder.committed())}, "
                    f"faults fired {len(schedule.fired)}/{len(self.faults)}")
                next_report = now + 5
            why = None
            if not self._restarting.is_set():
                driver = self._current_driver()
                driver.reload()
                if driver.status not in ("running", "paused"):
                    why = f"the driver exited ({done}/{total} consumed): {driver.log_tail(5)}"
            if now - moved > self.stall_timeout:
                why = f"no progress for {self.stall_timeout:.0f} s ({done}/{total} consumed)"
            if why:
                rate = done / max(now - started, 1e-9)
                return {"reason": why, "consumed": done, "total": total, "records_per_s": round(rate, 1),
                        "seconds": round(now - started, 1)}
            time.sleep(0.5)

    @staticmethod
    def _stream_can_still_trigger(schedule: Schedule) -> bool:
        """Once the input is consumed only a clock can still fire a step; other unfired steps are vacuous."""
        return any(step.point == "time" for step in schedule.unfired())


def _ignore(type: str, **fields: object) -> None:
    """The gate's recorder between scenarios."""
