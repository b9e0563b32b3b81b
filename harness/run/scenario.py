"""One scenario end to end on a running cluster: topics, workload, the pipeline's driver, the wait until
the whole input is consumed, the read_committed read, the verdict, the history and the report."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from harness import versions
from harness.checker.commits import batches_committed_twice, with_commit_history
from harness.checker.compose import OutputCheck
from harness.checker.judge import Judgement, judge
from harness.checker.oracle import Oracle
from harness.checker.repeats import repeats, with_idempotent_repeats
from harness.checker.rewrites import rewrites_that_changed_rows
from harness.checker.table_files import with_rewritten_files
from harness.checker.verdict import FAIL, NONE, PASS, Anomaly, Verdict, with_anomaly
from harness.client.client_log import kept_in
from harness.client.reader import CommittedReader, ReadResult
from harness.client.records import Records, in_produce_order
from harness.client.scenario_input import ScenarioInput
from harness.client.topics import create_topics, unique_name
from harness.client.workload import InputRecord, SendLog, Workload
from harness.cluster.dump_log import dump_topic
from harness.cluster.spark import Submit
from harness.cluster.topology import Cluster
from harness.driver.state_stores import STATE_STORES
from harness.errors import BadInput, InfrastructureError
from harness.evidence import write_evidence
from harness.faults.nemesis import Nemesis
from harness.faults.schedule import Schedule
from harness.faults.space import Observation
from harness.faults.spec import FaultStep
from harness.gate.points import Observe
from harness.gate.relay_files import RelayFiles
from harness.history import History, read_history
from harness.output.base import Output, Place
from harness.output.commits import Commit, TableCorrupt, parsed
from harness.output.registry import store
from harness.progress import say
from harness.report import write_scenario_page
from harness.report.folders import scenario_dir
from harness.run.checkpoint import BatchWatcher, CheckpointFolder
from harness.run.consumption import ConsumptionWait
from harness.run.driver_supervisor import DriverSupervisor
from harness.run.explain import EVENT_TYPES, Explainer, explain, explain_by_commits, overwrites
from harness.run.latency import end_to_end
from harness.run.leadership import LeadershipWatch
from harness.run.phases import phases
from harness.run.table_watch import POINT as TABLE_POINT
from harness.run.table_watch import GateHolds
from harness.subject.bundle import Bundle
from harness.subject.code_spec import STATE_TABLE, CodeSpec
from harness.subject.dependencies import check_not_owned
from harness.subject.pipeline import Pipeline


@dataclass
class ScenarioResult:
    """What a scenario observed, with the verdict."""

    name: str
    verdict: Verdict  # the output's verdict (the judge adds `vacuous` for a fault that never fired)
    sends: SendLog
    read: ReadResult
    batches_planned: list[int]
    batches_committed: list[int]
    seconds: dict[str, float] = field(default_factory=dict)
    report_dir: Path | None = None
    stateful: bool = False  # the query kept state (seen in its checkpoint)
    rate: float = 0.0  # live input at this many records/s (0: a backlog)
    latency: dict | None = None  # live input: input acked to output written, per second (see harness.run.latency)
    phases: dict = field(default_factory=dict)  # where the time went (see harness.run.phases)
    judgement: Judgement | None = None  # the outcome, from the one judge (harness.checker.judge)
    brokers: int = 1  # Kafka brokers in the cluster it ran on
    output: str = "kafka"  # where the sink wrote: a store's name (harness.output.registry)
    stack: versions.Stack = field(default_factory=versions.stack)  # the versions of the cluster it ran on
    where: str = ""  # the output's topic or table path
    table: str = ""  # a table output's kind, as the sink declares it: log or state (harness.checker.state_table)
    store: str = "volume"  # where a table lived: the run's volume, or its S3 server (s3)
    dependencies: dict | None = None  # what shipped with the sink (harness.subject.bundle), None when nothing

    @property
    def outcome(self) -> str:
        """pass, fail, ineffective or unknown: what every front end reports."""
        assert self.judgement is not None, "judged when the scenario ends"
        return self.judgement.outcome

    @property
    def sink_kind(self) -> str:
        """Whether the sink wrote in transactions, from the gate points this run reached."""
        return self.observation.kind

    @property
    def observation(self) -> Observation:
        """What this run showed of the sink and pipeline: the fault space is drawn from a baseline's."""
        return Observation.from_events(self.events("point", TABLE_POINT), self.stateful, self.brokers, self.output)

    @property
    def exactly_once(self) -> bool:
        """Passed: every fault fired without an injection error and had an effect, and the output is
        exactly the model's (or the reference's)."""
        return self.outcome == PASS

    def summary(self) -> str:
        """The outcome in one line, the first anomaly's explanation, and where its report is."""
        text = self.judgement.summary() if self.judgement else self.verdict.summary()
        why = next((e["explanation"] for a in self.verdict.anomalies.values() for e in a.examples
                    if "explanation" in e), None)
        return (f"{self.name}: {text}" + (f"; e.g. {why}" if why else "")
                + (f"; report: {self.report_dir}" if self.report_dir else ""))

    def events(self, *types: str) -> list[dict]:
        """Events of the scenario's history, of the given types (all when none are given)."""
        assert self.report_dir is not None
        return read_history(self.report_dir / "history.jsonl", types)

    def to_dict(self) -> dict:
        return {
            "scenario": self.name,
            "outcome": self.judgement.outcome if self.judgement else self.verdict.outcome,
            "reasons": list(self.judgement.reasons) if self.judgement else [],
            "verdict": self.verdict.to_dict(),
            "sends": {"acked": self.sends.acked, "failed": self.sends.failed, "unknown": self.sends.unknown},
            "read": {"records": len(self.read.records), "stable": self.read.stable, "high": self.read.high,
                     "stuck": self.read.stuck, "aborted": self.read.aborted,
                     "open_transactions": self.read.open_transactions},
            "batches": {"planned": self.batches_planned, "committed": self.batches_committed},
            "stateful": self.stateful,
            "output": {"kind": self.output, "where": self.where, **({"table": self.table} if self.table else {}),
                       **({"store": self.store} if store(self.output).table else {})},
            "input": {"rate": self.rate or "backlog", "latency": self.latency},
            "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
            "phases": self.phases,
            "versions": self.stack.described(self.output, self.store),
            **({"dependencies": self.dependencies} if self.dependencies else {}),
        }


def judged(result: ScenarioResult, faults: Sequence[str], unfired: Sequence[str],
           speculation: bool = False) -> list[dict]:
    """Judge a finished scenario from its history (harness.checker.judge), record the judgement at the
    end of the history; the history's events, sends left out."""
    assert result.report_dir is not None
    path = result.report_dir / "history.jsonl"
    events = read_history(path, leave_out={"send"})
    result.judgement = judge(result.verdict, events, faults, unfired, live=bool(result.rate),
                             latency_measured=(result.latency or {}).get("measured"), acked=result.sends.acked,
                             speculation=speculation)
    result.verdict = result.judgement.verdict
    history = History(path)
    events.append(history.record("judgement", outcome=result.outcome, reasons=list(result.judgement.reasons)))
    history.close()
    return events


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


class Scenario:
    """Composes the cluster, workload, driver, schedule, nemesis, reader and checkers for one run."""

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
    ) -> None:
        """`oracle`: what the output is compared with (chosen above: harness.run.session makes scenarios
        with their oracle and the settings' defaults). `rate`: live input, produced at this many
        records/s while the stream runs (0: a backlog first). `speculation`: Spark runs copies of slow tasks.
        `restarts`: how often a query that fails on its own is started again (harness.run.driver_supervisor).
        `output`: where the sink writes and the harness reads (harness.output: kafka or delta); `table_store`: where
        its table lives (the run's volume, or its S3 server). `bundle`: what ships with the sink, resolved
        (harness.subject.bundle): its packages and jars, its Spark settings."""
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
        self.report_dir = scenario_dir(cluster.run_id, name)
        if self.report_dir.exists():
            raise BadInput(f"scenario '{name}' already ran in run {cluster.run_id}: give each scenario its own name")
        self.history = History(self.report_dir / "history.jsonl")
        self.unfired: list[str] = []
        self._corrupt: dict | None = None  # the table.corrupt event, when the table could not be read

    def run(self) -> ScenarioResult:
        """Runs the scenario, judges it (harness.checker.judge) and writes its report."""
        try:
            with kept_in(self.report_dir):
                result = self._run()
        finally:
            self.history.close()
        if result.verdict.anomalies and self.pipeline.identity is not None and not store(result.output).table:
            self._explain(result, self.pipeline.identity)  # from the broker's log (a table's: see _run)
        events = judged(result, [str(f) for f in self.faults], self.unfired, self.speculation)
        result.phases = phases(events)
        summary = result.to_dict()
        write_evidence(self.report_dir / "result.json", json.dumps(summary, indent=2))
        write_scenario_page(self.report_dir, summary, result.read.records, events)
        return result

    def _run(self) -> ScenarioResult:
        seconds: dict[str, float] = {}
        kafka = self.cluster.kafka
        started = time.monotonic()
        self.oracle.prepare(self.workload, self.partitions)
        seconds["oracle"] = time.monotonic() - started
        input_topic, output_topic = unique_name(self.name, "in"), unique_name(self.name, "out")
        marker_topic = unique_name(self.name, "markers")
        create_topics(kafka.admin(), [input_topic, output_topic, marker_topic], self.partitions)
        self.history.record("scenario.start", scenario=self.name, pipeline=self.pipeline.name, sink=self.sink.spec,
                            pipeline_spec=self.pipeline.code.spec, oracle=self.oracle.name,
                            faults=[str(f) for f in self.faults], state_store=self.state_store,
                            speculation=self.speculation, restarts=self.restarts, partitions=self.partitions,
                            output=self.output, store=self.table_store,
                            rate=self.rate, **self._shipped(),
                            brokers=len(kafka.brokers),
                            max_offsets_per_trigger=self.max_offsets_per_trigger,
                            input_topic=input_topic, output_topic=output_topic, workload=vars(self.workload))

        first_batch = threading.Event()  # live input waits for it after its first record
        input_ = ScenarioInput(kafka.bootstrap_direct, input_topic, self.partitions,
                               self.pipeline.inputs(self.workload), self.rate, self.history,
                               (lambda: first_batch.wait(self.stall_timeout)) if self.rate else None)
        if not self.rate:
            started = time.monotonic()
            say(f"{self.name}: producing {self.workload.records} records to {input_topic}")
            input_.produce()
            seconds["produce"] = time.monotonic() - started

        checkpoint = self.cluster.checkpoint(self.name)
        files = self.cluster.files
        assert files is not None
        output = store(self.output).output(Place(self.cluster, files, kafka.bootstrap_direct, output_topic, checkpoint,
                                                 self.name, self.sink.table == STATE_TABLE, self.table_store))
        output.prepare()
        hold = output.hold()
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
            *(["--speculation"] if self.speculation else []),
            "--output", output.name, "--context", json.dumps(output.context()),
            "--spark-conf", json.dumps(output.spark_settings()),
            *(["--hold-table-commits", json.dumps([hold.folder, hold.pattern, hold.holds])] if hold else []),
        ]
        for option, code in (("--sink-file", self.sink), ("--pipeline-file", self.pipeline.code)):
            if code.shipped:
                driver_args += [option, self._ship(code, files, checkpoint)]
        folder = CheckpointFolder(files, checkpoint)
        watcher = BatchWatcher(folder, self.history)
        supervisor = DriverSupervisor(self.cluster, self.name, driver_args, self.history, self.report_dir / "logs",
                                      self.pipeline.name, self.sink.spec, self.restarts, self._submit(output))
        nemesis = Nemesis(self.cluster, self.history, supervisor.current, supervisor.replace)
        # where the driver cannot be held at a table's commits (on object storage), their answers are held
        at_gate = GateHolds() if hold is None and store(self.output).table and self.table_store != "volume" else None
        schedule = Schedule(self.faults, nemesis, self.history, at_gate)
        gate = self.cluster.gate
        assert gate is not None
        gate.record, gate.interceptor, gate.outputs = self.history.record, schedule, {output_topic}
        watcher.listeners.append(schedule.on_batch)

        if self.rate:
            def on_planned(event: dict) -> None:
                if event["type"] == "batch.planned":
                    first_batch.set()
            watcher.listeners.append(on_planned)
        watcher.start()
        tables = output.watch(folder, self.history, schedule.on_table_commit, at_gate)
        leadership = (LeadershipWatch(kafka, [input_topic, output_topic, marker_topic], self.history).start()
                      if len(kafka.brokers) > 1 else None)
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
                                         self.stall_timeout, self.history, lambda: gate.failure).run()
            seconds["consume"] = time.monotonic() - started
        finally:
            input_.stop()
            gate.interceptor, gate.record, gate.outputs = Observe(), _ignore, set()
            schedule.close()
            nemesis.heal_all()
            nemesis.close()
            watcher.stop()
            if tables is not None:
                tables.stop()
            if leadership is not None:
                leadership.stop()
            supervisor.retire()
        unhealthy = self.cluster.unhealthy()
        if unhealthy:
            raise InfrastructureError(f"{self.name}: after healing, {unhealthy}")

        sends = input_.sends(self.name)
        started = time.monotonic()
        consumed = partial(self._consumed_input, folder, input_topic) if incomplete else None
        state = self.sink.table == STATE_TABLE
        output_check = (self.oracle.state_check(self.workload, sends, consumed) if state
                        else self.oracle.check(self.workload, sends, consumed, ordered=output.ordered))
        seconds["model"] = time.monotonic() - started  # the expected results: read_and_check's first part
        read = self._read(output, output_check.feed, incomplete)
        self.history.record("read", records=len(read.records), stuck=read.stuck, aborted=read.aborted,
                            output=output.name, where=output.where)
        try:
            with parsed(output.where):
                commits = output.commits()
        except TableCorrupt as corrupt:  # a version names a file that is gone: its history cannot be told
            self._corrupted(corrupt)
            commits = []
        try:  # each rewrite (a compaction) against the table before it: it must move rows, not change them
            with parsed(output.where):
                rewrites = rewrites_that_changed_rows(commits, output.change_of, output.unit)
        except TableCorrupt as corrupt:  # a table before or after a rewrite names a file that is gone
            self._corrupted(corrupt)
            rewrites = None
        running = tables.attributed if tables is not None else {}
        verdict = output_check.verdict(read, incomplete)
        if self._corrupt is not None:
            verdict = with_corrupt_table(verdict, self._corrupt)
        if state or output.keyed:  # a key's row set again is judged by what the commit changed
            verdict = self._with_repeats(verdict, commits, running, output)
        else:
            verdict = self._with_commit_history(verdict, commits, running, output.unit)
        verdict = with_anomaly(verdict, rewrites)
        # objects written twice: recorded by the gate for a table on S3 only, read back where there is a
        # verdict to explain (the history holds every send: not parsed again for nothing)
        again = (overwrites(read_history(self.history.path, ("scenario.start", "s3.overwrite")))
                 if self.table_store == "s3" and (read.rewritten or verdict.anomalies) else {})
        verdict = with_rewritten_files(verdict, read.rewritten, again.get)
        if commits and verdict.anomalies and self.pipeline.identity is not None and not state:
            self._explain_by_commits(verdict, read, output, commits, running, self.pipeline.identity, again)
        self.unfired = [str(step) for step in schedule.unfired()]
        seconds["read_and_check"] = time.monotonic() - started
        self.history.record("verdict", **verdict.to_dict())
        latency = None
        if self.rate and isinstance(output_check, OutputCheck):
            latency = end_to_end(output_check.ledger.records, output_check.ledger.identities(), sends.acked_ms)
        listing = folder.listing()
        result = ScenarioResult(
            self.name, verdict, sends, read, folder.planned(listing), folder.committed(listing), seconds,
            self.report_dir, folder.stateful(listing), self.rate, latency, brokers=len(kafka.brokers),
            output=output.name, where=output.where, table=self.sink.table if store(output.name).table else "",
            stack=self.cluster.images.stack, store=self.table_store,
            dependencies=self.bundle.to_dict() if self.bundle else None,
        )
        return result

    def _read(self, output: Output, feed: Callable[[list], None], incomplete: dict | None) -> ReadResult:
        """What the output holds. Where the query failed (a crash loop, or a failure with restarts off), the
        failure is the verdict's cause, whatever the read then finds: an output the sink never made is
        recorded (`read.none`) and read as empty, never bad input that would hide the failure. A table that
        names a file that is not there is read as empty and failed (`table_corrupt`)."""
        try:
            with parsed(output.where):
                return output.read(on_batch=feed)
        except TableCorrupt as corrupt:  # the sink's failure: the verdict says so (table_corrupt)
            self._corrupted(corrupt)
            return ReadResult(Records(), {}, {})
        except BadInput as error:
            if not (incomplete and incomplete.get("anomaly")):
                raise
            self.history.record("read.none", output=output.name, where=output.where, why=str(error))
            return ReadResult(Records(), {}, {})

    def _corrupted(self, corrupt: TableCorrupt) -> None:
        """Record the first file found gone (or that cannot be parsed, and why), with the fault before it."""
        if self._corrupt is None:
            effects = read_history(self.history.path, ("effect",))
            self._corrupt = self.history.record("table.corrupt", where=corrupt.where, missing=corrupt.missing,
                                                after=effects[-1]["fault"] if effects else None,
                                                **({"error": corrupt.error} if corrupt.error else {}))

    def _with_commit_history(self, verdict: Verdict, commits: list[Commit], running: dict[int, int],
                             unit: str) -> Verdict:
        """The verdict with what the store's own history shows (harness.checker.commits): a batch
        committed twice, its versions named; a version's batch is the one it names, else the one Spark ran
        when it committed (`running`: version -> batch, from harness.run.table_watch)."""
        if not commits:
            return verdict
        self._record_history(commits, unit)
        return with_commit_history(verdict, batches_committed_twice(commits, running, unit))

    def _with_repeats(self, verdict: Verdict, commits: list[Commit], running: dict[int, int],
                      output: Output) -> Verdict:
        """A state table's verdict with what its history shows (harness.checker.repeats): a batch applied
        twice is an anomaly naming its versions and the keys it changed again, each `wrong_value` of such
        a key explained by them; a batch committed again without changing a row is said, not blamed."""
        if not commits:
            return verdict
        self._record_history(commits, output.unit)
        found = repeats(commits, running, output.change_of, output.unit)
        for repeat in found.idempotent:
            self.history.record("table.repeat", **repeat)
        for example in verdict.anomalies.get("wrong_value", Anomaly("wrong_value")).examples:
            if example.get("key") in found.by_key:
                example["explanation"] = found.by_key[example["key"]]
        verdict = with_commit_history(verdict, found.applied_twice if found.applied_twice.count else None)
        return with_idempotent_repeats(verdict, found)

    def _record_history(self, commits: list[Commit], unit: str) -> None:
        self.history.record("table.history", unit=unit,
                            versions=[{"version": c.version, "batch": c.batch, "app_id": c.app_id,
                                       "operation": c.operation, "rows": c.rows, "repeats": c.repeats,
                                       **({"rewrite": True} if c.rewrite else {})}
                                      for c in commits])

    def _explain_by_commits(self, verdict: Verdict, read: ReadResult, output: Output, commits: list[Commit],
                            running: dict[int, int], identity: Callable[[bytes], str], again: dict[str, str]) -> None:
        """Each duplicate example of a table output explained by the versions that hold its copies (and a
        data file of theirs the S3 server wrote twice: `again`, harness.run.explain.overwrites); one that cannot
        be explained is said on the console, never the verdict's concern."""
        batches = {**{c.version: c.batch for c in commits if c.batch is not None}, **running}
        try:
            explain_by_commits(verdict, read.records, map(partial(_identity_or_none, identity), read.records.values),
                               output.commit_of, batches, output.unit,
                               lambda partition: again.get(output.file_of(partition) or ""))
        except Exception as error:  # noqa: BLE001 - an explanation is extra: the verdict stands without it
            say(f"{self.name}: the anomalies could not be explained ({type(error).__name__}: {error})")

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
                    map(partial(_identity_or_none, identity), result.read.records.values), identity)
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

    def _shipped(self) -> dict:
        """What shipped with the sink as the history records it: resolved, and as asked (what a replay gives)."""
        if self.bundle is None:
            return {}
        return {"dependencies": self.bundle.to_dict(), "dependencies_asked": self.bundle.asked.to_dict()}

    def _submit(self, output: Output) -> Submit:
        """The sink's dependencies installed on the cluster, and its settings, checked against the output's
        own (a table's catalog and extensions are the harness's)."""
        if self.bundle is None:
            return Submit()
        for key, _ in self.bundle.conf:
            check_not_owned(key, output.spark_settings(), output.name)
        if not self.bundle.files:
            return Submit(conf=self.bundle.conf)
        return Submit(self.cluster.install_dependencies(self.bundle.digest, *self.bundle.paths()), self.bundle.conf)

    @staticmethod
    def _ship(code: CodeSpec, files: RelayFiles, checkpoint: str) -> str:
        """Copy code from outside the harness next to the checkpoint, through the relay (the driver sees it
        there): the bytes read when the code was resolved (a file as it is, a package zipped)."""
        assert code.shipment is not None, "shipped code is read when it is resolved"
        shipped = f"{checkpoint}-code/{code.shipment.name}"
        files.write(shipped, code.shipment.data)
        return shipped


def _ignore(type: str, **fields: object) -> None:
    """The gate's recorder between scenarios."""


PAYLOADS_UP_TO = 200_000  # records of output whose values the log is searched for lost records' writes


def _identity_or_none(identity: Callable[[bytes], str], value: bytes) -> str | None:
    """A record's identity, None for one the pipeline cannot read (an `unreadable` anomaly of its own)."""
    try:
        return identity(value)
    except Exception:  # noqa: BLE001 - whatever the pipeline's identity raises
        return None


def with_corrupt_table(verdict: Verdict, corrupt: dict) -> Verdict:
    """A verdict failed for a table that cannot be read: the missing file, and the fault before it, its
    example (what was read, nothing, is not judged record by record)."""
    anomaly = Anomaly("table_corrupt")
    anomaly.add({"where": corrupt["where"], "missing": corrupt["missing"], "after": corrupt["after"],
                 **({"error": corrupt["error"]} if corrupt.get("error") else {})})
    return Verdict(FAIL, NONE, {"table_corrupt": anomaly}, verdict.expected, 0, 0, None, verdict.oracle)
