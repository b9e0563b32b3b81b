"""What a scenario observed, with its verdict, and the judgement made from its history once it ended
(harness.checker.judge): what every front end reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness import versions
from harness.checker.judge import Judgement, judge
from harness.checker.verdict import PASS, Verdict
from harness.client.reader import ReadResult
from harness.client.workload import SendLog
from harness.faults.space import Observation
from harness.history import History, read_history
from harness.output.registry import store
from harness.run.table_watch import POINT as TABLE_POINT


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
    engine: str = "spark"  # the stream engine it ran on (harness.settings.ENGINES)
    engine_read: dict | None = None  # Spark's own read of a table with an anomaly (harness.run.engine_read)

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
        return Observation.from_events(self.events("point", TABLE_POINT), self.stateful, self.brokers, self.output,
                                       self.engine)

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
            **({"engine_read": self.engine_read} if self.engine_read else {}),
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
