"""One scenario end to end on a running cluster, in phases as Jepsen runs a test: set up (the oracle, the
topics), the workload, the system under test (its output, its driver), the nemesis (the faults wired to
their points), the run until the whole input is consumed, the read_committed read, the check, the result;
then the judgement, the explanation and the report."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

from harness.checker.compose import OutputCheck
from harness.checker.oracle import Check, Oracle
from harness.checker.verdict import Verdict
from harness.client.client_log import kept_in
from harness.client.reader import CommittedReader, ReadResult
from harness.client.records import in_produce_order
from harness.client.scenario_input import ScenarioInput
from harness.client.topics import create_topics, unique_name
from harness.client.workload import InputRecord, SendLog, Workload
from harness.cluster.dump_log import dump_topic
from harness.cluster.topology import Cluster
from harness.driver.state_stores import STATE_STORES
from harness.errors import BadInput, InfrastructureError
from harness.evidence import write_evidence
from harness.faults.nemesis import Nemesis
from harness.faults.schedule import Schedule
from harness.faults.spec import FaultStep
from harness.gate.copies import CopiedWrites
from harness.gate.relay_files import RelayFiles
from harness.history import History
from harness.output.base import Output, Place
from harness.output.registry import store
from harness.progress import say
from harness.report import write_scenario_page
from harness.report.folders import scenario_dir
from harness.run.checkpoint import BatchWatcher, CheckpointFolder
from harness.run.consumption import ConsumptionWait
from harness.run.driver_supervisor import DriverSupervisor
from harness.run.engine_read import EngineReadFailed, compared, said, spark_rows
from harness.run.explain import EVENT_TYPES, Explainer, explain, identity_or_none
from harness.run.latency import end_to_end
from harness.run.leadership import LeadershipWatch
from harness.run.output_verdict import OutputVerdict
from harness.run.phases import phases
from harness.run.scenario_result import ScenarioResult, judged
from harness.run.shipping import ship, shipped, submit
from harness.run.system import Faults, System, Topics, stop
from harness.run.table_watch import GateHolds
from harness.subject.bundle import Bundle
from harness.subject.code_spec import STATE_TABLE, CodeSpec
from harness.subject.pipeline import Pipeline

BATCHES = 5  # micro-batches a backlog is read in


def batch_size(records: int, partitions: int, batches: int = BATCHES) -> int:
    """Records per micro-batch (maxOffsetsPerTrigger) that read a backlog in `batches` batches (fewer for a
    small one: one a thousand records, rounded up).

    A batch costs mostly the same whatever its size (its jobs, a task and a transaction per partition),
    so a run's time follows its number of batches; five leave room for every batch point the matrix
    uses (up to batch 3) and for a replay after it, and keep a million records to five batches. Spark
    shares the limit out over the partitions in proportion and rounds each share down, so a batch reads
    up to one record a partition less than its limit: the limit carries one a partition more, or the few
    records left over would take a batch of their own (a sixth batch, as long as the others, for 11 of
    10,000 records)."""
    batches = min(batches, max(1, -(-records // 1_000)))
    return -(-records // batches) + partitions


@contextmanager
def timed(seconds: dict[str, float], phase: str) -> Iterator[None]:
    """The seconds a phase took, kept in `seconds` when it ends without an error (a result's `seconds`)."""
    started = time.monotonic()
    yield
    seconds[phase] = time.monotonic() - started


class Scenario:
    """Composes the cluster, workload, driver, schedule, nemesis, reader and checkers for one run."""

    engine = "spark"  # the stream engine it runs on (harness.settings.ENGINES)

    def __init__(
        self,
        cluster: Cluster,
        name: str,
        pipeline: Pipeline,
        sink: CodeSpec,
        oracle: Oracle,
        faults: list[FaultStep],
        workload: Workload,
        partitions: int,
        stall_timeout: float,
        max_offsets_per_trigger: int | None,
        state_store: str,
        rate: float,
        speculation: bool = False,
        restarts: int = 3,
        output: str = "kafka",
        table_store: str = "volume",
        bundle: Bundle | None = None,
        engine_read: bool = False,
    ) -> None:
        """`oracle`: what the output is compared with (chosen above: harness.run.session makes scenarios
        with their oracle and the settings' defaults). `rate`: live input, produced at this many
        records/s while the stream runs (0: a backlog first). `speculation`: Spark runs copies of slow tasks.
        `restarts`: how often a query that fails on its own is started again (harness.run.driver_supervisor).
        `output`: where the sink writes and the harness reads (harness.output: kafka or delta); `table_store`: where
        its table lives (the run's volume, or its S3 server). `bundle`: what ships with the sink, resolved
        (harness.subject.bundle): its packages and jars, its Spark settings. `engine_read`: a table on the volume
        with an anomaly is read by Spark too (harness.run.engine_read), as its users would read it."""
        self.cluster = cluster
        self.name = name
        self.pipeline = pipeline
        self.sink = sink
        self.oracle = oracle
        self.faults = faults
        self.workload = self.pipeline.workload(workload)
        self.partitions = partitions
        self.stall_timeout = stall_timeout
        self.max_offsets_per_trigger = max_offsets_per_trigger or batch_size(self.workload.records, partitions)
        if state_store not in STATE_STORES:
            raise BadInput(f"state store '{state_store}': one of {', '.join(STATE_STORES)}")
        self.state_store = state_store
        if rate < 0:
            raise BadInput(f"rate {rate}: records per second, 0 for a backlog")
        self.rate = rate
        self.speculation = speculation
        self.restarts = restarts
        self.output = output
        self.table_store = table_store
        self.bundle = bundle
        self.engine_read = engine_read
        self.report_dir = scenario_dir(cluster.run_id, name)
        if self.report_dir.exists():
            raise BadInput(f"scenario '{name}' already ran in run {cluster.run_id}: give each scenario its own name")
        self.history = History(self.report_dir / "history.jsonl")
        self.unfired: list[str] = []
        self.output_verdict = OutputVerdict(name, self.history, table_store == "s3", pipeline.identity)

    def run(self) -> ScenarioResult:
        """Runs the scenario, judges it (harness.checker.judge) and writes its report."""
        try:
            with kept_in(self.report_dir):
                result = self._run()
        finally:
            self.history.close()
        if result.verdict.anomalies and self.pipeline.identity is not None and not store(result.output).table:
            self._explain(result, self.pipeline.identity)  # from the broker's log (a table's: _check)
        events = judged(result, [str(f) for f in self.faults], self.unfired, self.speculation)
        result.phases = phases(events)
        summary = result.to_dict()
        write_evidence(self.report_dir / "result.json", json.dumps(summary, indent=2))
        write_scenario_page(self.report_dir, summary, result.read.records, events)
        return result

    def _run(self) -> ScenarioResult:
        """The phases, in the order Jepsen runs a test's; `seconds`: what the slow ones took (the result's)."""
        seconds: dict[str, float] = {}
        topics = self._set_up(seconds)
        input_, first_batch = self._workload(topics, seconds)
        system = self._system(topics, input_)
        faults = self._nemesis(system, topics, first_batch)
        incomplete = self._consume(system, faults, topics.input, seconds)
        self._healthy()
        sends = input_.sends(self.name)
        with timed(seconds, "read_and_check"):
            check = self._model(system, topics.input, sends, incomplete, seconds)
            read = self._read(system.output, check, incomplete)
            verdict = self._check(system, faults, check, read, incomplete)
            self.unfired = [str(step) for step in faults.schedule.unfired()]
        self.history.record("verdict", **verdict.to_dict())
        result = self._result(system, check, sends, read, verdict, seconds)
        result.engine_read = self._read_as_users_do(system.output, read, verdict)
        return result

    def _read_as_users_do(self, output: Output, read: ReadResult, verdict: Verdict) -> dict | None:
        """Asked for (`engine_read`), Spark's own read of a table the harness found an anomaly in, beside the
        harness's read; None otherwise."""
        source = output.engine_source() if self.engine_read and verdict.anomalies else None
        if source is None:
            return None
        try:
            found = compared(spark_rows(self.cluster, source), read.records)
        except EngineReadFailed as error:
            found = {"error": str(error)}
        found["said"] = said(found)
        self.history.record("engine.read", **found)
        say(f"{self.name}: {found['said']}")
        return found

    def _set_up(self, seconds: dict[str, float]) -> Topics:
        """The oracle ready and the scenario's topics made before anything of the system runs; the start
        recorded with everything the scenario was given (what a replay runs again)."""
        kafka = self.cluster.kafka
        with timed(seconds, "oracle"):
            self.oracle.prepare(self.workload, self.partitions)
        topics = Topics(unique_name(self.name, "in"), unique_name(self.name, "out"), unique_name(self.name, "markers"))
        create_topics(kafka.admin(), [topics.input, topics.output, topics.markers], self.partitions)
        self.history.record("scenario.start", scenario=self.name, pipeline=self.pipeline.name, sink=self.sink.spec,
                            pipeline_spec=self.pipeline.code.spec, oracle=self.oracle.name,
                            faults=[str(f) for f in self.faults], state_store=self.state_store,
                            speculation=self.speculation, restarts=self.restarts, partitions=self.partitions,
                            output=self.output, store=self.table_store,
                            rate=self.rate, **shipped(self.bundle),
                            brokers=len(kafka.brokers),
                            max_offsets_per_trigger=self.max_offsets_per_trigger,
                            input_topic=topics.input, output_topic=topics.output, workload=vars(self.workload))
        return topics

    def _workload(self, topics: Topics, seconds: dict[str, float]) -> tuple[ScenarioInput, threading.Event]:
        """The input: a backlog produced now, before the stream starts (its time apart from the stream's), or
        live input, produced while the stream runs once its first record waited for the first batch (the
        event returned: set when that batch is planned)."""
        first_batch = threading.Event()  # live input waits for it after its first record
        input_ = ScenarioInput(self.cluster.kafka.bootstrap_direct, topics.input, self.partitions,
                               self.pipeline.inputs(self.workload), self.rate, self.history,
                               (lambda: first_batch.wait(self.stall_timeout)) if self.rate else None)
        if not self.rate:
            with timed(seconds, "produce"):
                say(f"{self.name}: producing {self.workload.records} records to {topics.input}")
                input_.produce()
        return input_, first_batch

    def _system(self, topics: Topics, input_: ScenarioInput) -> System:
        """The system under test, made ready but not started: the output prepared before the sink writes to
        it, the driver's command and its checkpoint's watcher (the driver starts with the faults' clock)."""
        checkpoint = self.cluster.checkpoint(self.name)
        files = self.cluster.files
        assert files is not None
        output = store(self.output).output(Place(self.cluster, files, self.cluster.kafka.bootstrap_direct,
                                                 topics.output, checkpoint, self.name,
                                                 self.sink.table == STATE_TABLE, self.table_store))
        output.prepare()
        hold = output.hold()
        hold = replace(hold, commits=f"{checkpoint}/commits") if hold else None
        driver_args = self._driver_args(topics, output, files, checkpoint)
        folder = CheckpointFolder(files, checkpoint)
        watcher = BatchWatcher(folder, self.history)
        supervisor = DriverSupervisor(self.cluster, self.name, driver_args, self.history, self.report_dir / "logs",
                                      self.pipeline.name, self.sink.spec, self.restarts,
                                      submit(self.cluster, self.bundle, output), hold)
        return System(input_, output, hold, folder, watcher, supervisor)

    def _driver_args(self, topics: Topics, output: Output, files: RelayFiles, checkpoint: str) -> list[str]:
        """The driver's arguments (harness.driver): the pipeline, the sink and where they read and write; code
        from outside the harness shipped beside the checkpoint first."""
        driver_args = [
            "--pipeline", self.pipeline.code.module,
            "--bootstrap", self.cluster.kafka.bootstrap_chaos,
            "--input-topic", topics.input,
            "--output-topic", topics.output,
            "--checkpoint", checkpoint,
            "--max-offsets-per-trigger", str(self.max_offsets_per_trigger),
            "--sink", self.sink.argument,
            "--sink-id", f"{self.name}-{topics.output[-12:]}",
            "--marker-topic", topics.markers,
            "--state-store", self.state_store,
            *(["--speculation"] if self.speculation else []),
            "--output", output.name, "--context", json.dumps(output.context()),
            "--spark-conf", json.dumps(output.spark_settings()),
        ]
        for option, code in (("--sink-file", self.sink), ("--pipeline-file", self.pipeline.code)):
            if code.shipped:
                driver_args += [option, ship(code, files, checkpoint)]
        return driver_args

    def _nemesis(self, system: System, topics: Topics, first_batch: threading.Event) -> Faults:
        """The faults wired to what triggers them (the gate's points, the checkpoint's batches, a table's
        commits) before the driver starts, and the watchers started that record what the run does; the
        schedule's clock starts with the driver (`_consume`)."""
        kafka = self.cluster.kafka
        nemesis = Nemesis(self.cluster, self.history, system.supervisor.current, system.supervisor.replace)
        # where the driver cannot be held at a table's commits (on object storage), their answers are held
        at_gate = (GateHolds() if system.hold is None and store(self.output).table and self.table_store != "volume"
                   else None)
        schedule = Schedule(self.faults, nemesis, self.history, at_gate)
        gate = self.cluster.gate
        assert gate is not None
        gate.record, gate.interceptor, gate.outputs = self.history.record, schedule, {topics.output}
        gate.commit_keys = store(self.output).commit_object  # which objects on S3 commit its table: the store says
        gate.copies = CopiedWrites() if self.speculation else None  # a copy's evidence, seen on the wire
        system.watcher.listeners.append(schedule.on_batch)

        if self.rate:
            def on_planned(event: dict) -> None:
                if event["type"] == "batch.planned":
                    first_batch.set()
            system.watcher.listeners.append(on_planned)
        system.watcher.start()
        tables = system.output.watch(system.folder, self.history, schedule.on_table_commit, at_gate)
        leadership = (LeadershipWatch(kafka, [topics.input, topics.output, topics.markers], self.history).start()
                      if len(kafka.brokers) > 1 else None)
        return Faults(schedule, gate, tables, leadership)

    def _consume(self, system: System, faults: Faults, input_topic: str, seconds: dict[str, float]) -> dict | None:
        """The run: the driver started and the faults' clock with it (a `time` fault counts from the query
        running), live input produced meanwhile, until the whole input is consumed (harness.run.consumption):
        None, or why not (`incomplete`). Whatever happens, all of it is then stopped and healed before the
        output is read (harness.run.system.stop)."""
        try:
            with timed(seconds, "driver_start"):
                system.supervisor.start()
                faults.schedule.start_clock()
            with timed(seconds, "consume"):
                if self.rate:
                    say(f"{self.name}: producing {self.workload.records} records to {input_topic} at {self.rate:g}/s")
                    system.input.start()
                return ConsumptionWait(self.name, system.folder, input_topic, system.input.target, faults.schedule,
                                       system.supervisor, self.stall_timeout, self.history,
                                       lambda: faults.gate.failure).run()
        finally:
            stop(system, faults)

    def _healthy(self) -> None:
        """A cluster still unhealthy after healing ran the scenario on something else than it was meant to:
        no verdict (InfrastructureError)."""
        unhealthy = self.cluster.unhealthy()
        if unhealthy:
            raise InfrastructureError(f"{self.name}: after healing, {unhealthy}")

    def _model(self, system: System, input_topic: str, sends: SendLog, incomplete: dict | None,
               seconds: dict[str, float]) -> Check:
        """The expected output (the model, or the reference's) from what was sent, before the read, which
        feeds it; in an incomplete run, only what the consumed input yields (`_consumed_input`)."""
        with timed(seconds, "model"):  # the expected results: read_and_check's first part
            consumed = partial(self._consumed_input, system.folder, input_topic) if incomplete else None
            if self.sink.table == STATE_TABLE:
                return self.oracle.state_check(self.workload, sends, consumed)
            return self.oracle.check(self.workload, sends, consumed, ordered=system.output.ordered)

    def _read(self, output: Output, check: Check, incomplete: dict | None) -> ReadResult:
        """What the output holds, as a consumer or a query of the table would read it: only what is
        committed (harness.run.output_verdict), fed to the check as it comes."""
        read = self.output_verdict.read(output, check.feed, incomplete)
        self.history.record("read", records=len(read.records), stuck=read.stuck, aborted=read.aborted,
                            output=output.name, where=output.where)
        return read

    def _check(self, system: System, faults: Faults, check: Check, read: ReadResult,
               incomplete: dict | None) -> Verdict:
        """The output's verdict, with what the store's own history shows (harness.run.output_verdict); a
        table's versions are attributed to batches by its commit point's watcher."""
        running = faults.tables.attributed if faults.tables is not None else {}
        return self.output_verdict.verdict(check, read, incomplete, system.output, self.sink.table == STATE_TABLE,
                                           running)

    def _result(self, system: System, check: Check, sends: SendLog, read: ReadResult, verdict: Verdict,
                seconds: dict[str, float]) -> ScenarioResult:
        """What the scenario observed: the verdict, the input and the read, the batches the checkpoint planned
        and committed, the latency of live input, and what it ran on."""
        latency = None
        if self.rate and isinstance(check, OutputCheck):
            latency = end_to_end(check.ledger.records, check.ledger.identities(), sends.acked_ms)
        listing = system.folder.listing()
        output = system.output
        return ScenarioResult(
            self.name, verdict, sends, read, system.folder.planned(listing), system.folder.committed(listing),
            seconds, self.report_dir, system.folder.stateful(listing), self.rate, latency,
            brokers=len(self.cluster.kafka.brokers), output=output.name, where=output.where,
            table=self.sink.table if store(output.name).table else "", stack=self.cluster.images.stack,
            store=self.table_store, dependencies=self.bundle.to_dict() if self.bundle else None, engine=self.engine,
        )

    def _explain(self, result: ScenarioResult, identity: Callable[[bytes], str]) -> None:
        """Each duplicate and lost example explained from the broker's log (harness.run.explain); one that
        cannot be explained is said on the console, never the verdict's concern."""
        events = result.events(*EVENT_TYPES)
        topic = next(e["output_topic"] for e in events if e["type"] == "scenario.start")
        try:
            lost = "lost" in result.verdict.anomalies and len(result.read.records) <= PAYLOADS_UP_TO
            log = dump_topic(partial(self.cluster.kafka.leader, topic), topic, list(range(self.partitions)),
                             payloads=lost)
            explain(result.verdict, Explainer(log, events), result.read.records,
                    map(partial(identity_or_none, identity), result.read.records.values), identity)
        except Exception as error:  # noqa: BLE001 - an explanation is extra: the verdict stands without it
            say(f"{self.name}: the anomalies could not be explained ({type(error).__name__}: {error})")

    def _consumed_input(self, folder: CheckpointFolder, input_topic: str) -> Iterator[InputRecord]:
        """The input the checkpoint says was consumed, in produce order: in an incomplete run only the
        results it yields can be lost (the rest of the input was never reached). A stateful query emits
        what a batch's input closes (a window the watermark passed) in the batch after it, so there the
        input of all committed batches but the last counts."""
        consumed = folder.consumed(input_topic, lag=1 if folder.stateful() else 0)
        inputs = in_produce_order(CommittedReader(self.cluster.kafka.bootstrap_direct).read(input_topic).records)
        return (InputRecord.read(r) for r in inputs if r.offset() < consumed.get(r.partition(), 0))


PAYLOADS_UP_TO = 200_000  # records of output whose values the log is searched for lost records' writes
