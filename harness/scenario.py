"""One scenario end to end on a running cluster: topics, workload, the pipeline's driver, the wait until
the whole input is consumed, the read_committed read, the verdict, the history and the report."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import versions
from harness.checker import FAIL, UNKNOWN, Anomaly, OutputCheck, Verdict
from harness.checker.differential import Capture, DifferentialCheck
from harness.checkpoint import BatchWatcher, CheckpointFolder
from harness.client_log import kept_in
from harness.cluster.topology import Cluster
from harness.code_spec import CodeSpec, SinkSpec, resolve_sink
from harness.consumption import ConsumptionWait
from harness.driver_supervisor import DriverSupervisor
from harness.errors import BadInput, InfrastructureError
from harness.faults.nemesis import Nemesis
from harness.faults.spec import FaultStep
from harness.gate.proxy import Observe
from harness.history import History, read_history
from harness.latency import end_to_end
from harness.matrix import kind_from_points
from harness.phases import phases
from harness.pipeline import Pipeline, load_pipeline
from harness.progress import say
from harness.reader import CommittedReader, ReadResult, in_produce_order
from harness.reference import reference_output
from harness.report import write_scenario_page
from harness.report.folders import run_report_dir
from harness.scenario_input import ScenarioInput
from harness.schedule import Schedule
from harness.state_stores import STATE_STORES
from harness.topics import create_topics, unique_name
from harness.workload import InputRecord, SendLog, Workload


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
    rate: float = 0.0  # live input at this many records/s (0: a backlog)
    latency: dict | None = None  # live input: input acked to output written, per second (see harness.latency)
    phases: dict = field(default_factory=dict)  # where the time went (see harness.phases)

    @property
    def sink_kind(self) -> str:
        """Whether the sink wrote in transactions, from the gate points this run reached."""
        return kind_from_points({e["point"] for e in self.events("point")})

    @property
    def exactly_once(self) -> bool:
        """Passed: every fault fired and had an effect, and the output is exactly the model's (or the reference's)."""
        return self.verdict.outcome == "pass"

    def summary(self) -> str:
        """The verdict in one line, and where its report is."""
        return f"{self.name}: {self.verdict.summary()}" + (f"; report: {self.report_dir}" if self.report_dir else "")

    def events(self, *types: str) -> list[dict]:
        """Events of the scenario's history, of the given types (all when none are given)."""
        assert self.report_dir is not None
        return read_history(self.report_dir / "history.jsonl", types)

    def to_dict(self) -> dict:
        return {
            "scenario": self.name,
            "verdict": self.verdict.to_dict(),
            "sends": {"acked": self.sends.acked, "failed": self.sends.failed, "unknown": self.sends.unknown},
            "read": {"records": len(self.read.records), "stable": self.read.stable, "high": self.read.high,
                     "stuck": self.read.stuck, "aborted": self.read.aborted,
                     "open_transactions": self.read.open_transactions},
            "batches": {"planned": self.batches_planned, "committed": self.batches_committed},
            "stateful": self.stateful,
            "input": {"rate": self.rate or "backlog", "latency": self.latency},
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
            "phases": self.phases,
            "versions": asdict(versions.stack()),
        }


BATCHES = 5  # micro-batches a backlog is read in


def batch_size(records: int) -> int:
    """Records per micro-batch (maxOffsetsPerTrigger): the backlog in about `BATCHES` batches, at least 1,000.

    A batch costs mostly the same whatever its size (its jobs, a task and a transaction per partition),
    so a run's time follows its number of batches; five leave room for every batch point the matrix
    uses (up to batch 3) and for a replay after it, and keep a million records to five batches."""
    return max(1_000, -(-records // BATCHES))


class Scenario:
    """Composes the cluster, workload, driver, schedule, nemesis, reader and checkers for one run."""

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        pipeline: str | Pipeline = "passthrough",
        sink: str | SinkSpec = "builtin_kafka",
        faults: list[FaultStep] | None = None,
        workload: Workload = Workload(20_000),
        partitions: int = 4,
        stall_timeout: float = 180.0,
        max_offsets_per_trigger: int | None = None,
        state_store: str = "hdfs",
        capture: bool = False,
        rate: float = 0.0,
    ) -> None:
        """`capture`: a reference run, whose output is the differential oracle's model. `rate`: live
        input, produced at this many records/s while the stream runs (0: a backlog produced first)."""
        self.cluster = cluster
        self.name = name
        self.pipeline = pipeline if isinstance(pipeline, Pipeline) else load_pipeline(pipeline)
        self.capture = capture
        self.sink = sink if isinstance(sink, SinkSpec) else resolve_sink(sink)
        self.faults = faults or []
        self.workload = self.pipeline.workload(workload)
        self.partitions = partitions
        self.stall_timeout = stall_timeout
        self.max_offsets_per_trigger = max_offsets_per_trigger or batch_size(self.workload.records)
        if state_store not in STATE_STORES:
            raise BadInput(f"state store '{state_store}': one of {', '.join(STATE_STORES)}")
        self.state_store = state_store
        if rate < 0:
            raise BadInput(f"rate {rate}: records per second, 0 for a backlog")
        self.rate = rate
        self.report_dir = run_report_dir(cluster.run_id) / name
        if self.report_dir.exists():
            raise BadInput(f"scenario '{name}' already ran in run {cluster.run_id}: give each scenario its own name")
        self.history = History(self.report_dir / "history.jsonl")

    def run(self) -> ScenarioResult:
        try:
            with kept_in(self.report_dir):
                result = self._run()
        finally:
            self.history.close()
        events = read_history(self.report_dir / "history.jsonl", leave_out={"send"})
        result.phases = phases(events)
        summary = result.to_dict()
        (self.report_dir / "result.json").write_text(json.dumps(summary, indent=2))
        write_scenario_page(self.report_dir, summary, result.read.records, events)
        return result

    def _run(self) -> ScenarioResult:
        seconds: dict[str, float] = {}
        kafka = self.cluster.kafka
        reference = None
        if self.pipeline.differential and not self.capture:
            started = time.monotonic()
            reference = reference_output(self.cluster, self.pipeline, self.workload, self.partitions)
            seconds["reference"] = time.monotonic() - started
        input_topic, output_topic = unique_name(self.name, "in"), unique_name(self.name, "out")
        marker_topic = unique_name(self.name, "markers")
        create_topics(kafka.admin(), [input_topic, output_topic, marker_topic], self.partitions)
        self.history.record("scenario.start", scenario=self.name, pipeline=self.pipeline.name, sink=self.sink.spec,
                            oracle="reference" if self.capture else self.pipeline.oracle,
                            faults=[str(f) for f in self.faults], state_store=self.state_store,
                            input_topic=input_topic, output_topic=output_topic, workload=vars(self.workload))

        input_ = ScenarioInput(kafka.bootstrap_direct, input_topic, self.partitions,
                               self.pipeline.inputs(self.workload), self.rate, self.history)
        if not self.rate:
            started = time.monotonic()
            say(f"{self.name}: producing {self.workload.records} records to {input_topic}")
            input_.produce()
            seconds["produce"] = time.monotonic() - started

        host_checkpoint, checkpoint = self.cluster.checkpoint(self.name)
        driver_args = [
            "--pipeline", self.pipeline.code.module,
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
        for option, code in (("--sink-file", self.sink), ("--pipeline-file", self.pipeline.code)):
            if code.shipped:
                driver_args += [option, self._ship(code, host_checkpoint, checkpoint)]
        folder = CheckpointFolder(host_checkpoint)
        watcher = BatchWatcher(folder, self.history)
        supervisor = DriverSupervisor(self.cluster, self.name, driver_args, self.history, self.report_dir / "logs",
                                      self.pipeline.name, self.sink.spec)
        nemesis = Nemesis(self.cluster, self.history, supervisor.current, supervisor.replace)
        schedule = Schedule(self.faults, nemesis, self.history)
        gate = self.cluster.gate
        assert gate is not None
        gate.record, gate.interceptor = self.history.record, schedule
        watcher.listeners.append(schedule.on_batch)
        watcher.start()
        incomplete = None
        try:
            started = time.monotonic()
            supervisor.start()
            schedule.start_clock()
            seconds["driver_start"] = time.monotonic() - started
            started = time.monotonic()
            if self.rate:
                say(f"{self.name}: producing {self.workload.records} records to {input_topic} at {self.rate:g}/s")
                input_.start()
            incomplete = ConsumptionWait(self.name, folder, input_topic, input_.target, schedule, supervisor,
                                         self.stall_timeout, self.history).run()
            seconds["consume"] = time.monotonic() - started
        finally:
            input_.stop()
            gate.interceptor, gate.record = Observe(), _ignore
            schedule.close()
            nemesis.heal_all()
            nemesis.close()
            watcher.stop()
            supervisor.retire()
        unhealthy = self.cluster.unhealthy()
        if unhealthy:
            raise InfrastructureError(f"{self.name}: after healing, {unhealthy}")

        sends = input_.sends(self.name)
        started = time.monotonic()
        output_check = self._oracle(reference, sends, folder, input_topic, incomplete)
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
        latency = None
        if self.rate and isinstance(output_check, OutputCheck):
            latency = end_to_end(output_check.ledger.records, output_check.ledger.identities(), sends.acked_ms)
        result = ScenarioResult(
            self.name, verdict, sends, read, folder.planned(), folder.committed(), seconds, self.report_dir,
            folder.stateful(), self.rate, latency,
        )
        return result

    def _oracle(self, reference: list | None, sends: SendLog, folder: CheckpointFolder, input_topic: str,
                incomplete: dict | None) -> OutputCheck | DifferentialCheck | Capture:
        """The pipeline's exact model, a fault-free run's output (differential), or, in a reference
        run, only that it finished."""
        if self.capture:
            return Capture()
        if reference is not None:
            return DifferentialCheck(reference, self.pipeline.output_mode)
        inputs = enumerate(self.pipeline.inputs(self.workload))  # the same records in the same order as sent
        expected = self.pipeline.expected(r for n, r in inputs if sends.was_acked(n))
        required = self._consumed_results(folder, input_topic) if incomplete else None
        return self.pipeline.output_check(expected, required)

    def _consumed_results(self, folder: CheckpointFolder, input_topic: str) -> set[str]:
        """The results the model expects of the input the checkpoint says was consumed: in an incomplete
        run only their absence is a loss (the rest of the input was never reached). A stateful query
        emits what a batch's input closes (a window the watermark passed) in the batch after it, so
        there the input of all committed batches but the last counts."""
        consumed = folder.consumed(input_topic, lag=1 if folder.stateful() else 0)
        inputs = in_produce_order(CommittedReader(self.cluster.kafka.bootstrap_direct).read(input_topic).records)
        expected = self.pipeline.expected(
            InputRecord.read(r) for r in inputs
            if r.offset() < consumed.get(r.partition(), 0)
        )
        return {identity for identity, want in expected.items() if want.required}

    @staticmethod
    def _ship(code: CodeSpec, host_checkpoint: Path, checkpoint: str) -> str:
        """Copy code from outside the harness next to the checkpoint (the driver sees it there): a file as it
        is, a module of a package as its whole top-level package, zipped."""
        folder = host_checkpoint.parent / f"{host_checkpoint.name}-code"
        folder.mkdir(exist_ok=True)
        if code.package is None:
            shutil.copy2(code.source, folder / code.source.name)
            return f"{checkpoint}-code/{code.source.name}"
        archive = shutil.make_archive(str(folder / code.package.name), "zip", code.package.parent, code.package.name)
        return f"{checkpoint}-code/{Path(archive).name}"


def _ignore(type: str, **fields: object) -> None:
    """The gate's recorder between scenarios."""
