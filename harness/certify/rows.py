"""A matrix row run as a scenario, and its outcome as a certificate row. The one place a row becomes a
Scenario: `certify` (in one process or in its workers), `pytest -m chaos --sink` and the benchmarks."""

from __future__ import annotations

import sys
import time
import traceback
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from harness.certify.matrix import MatrixScenario, rows_for
from harness.checker.judge import INEFFECTIVE
from harness.checker.verdict import UNKNOWN
from harness.cluster.topology import Cluster
from harness.errors import EXIT_INFRASTRUCTURE, BadInput, HarnessError
from harness.faults.space import Observation, space
from harness.progress import say
from harness.report.folders import run_report_dir
from harness.run.flink_session import flink_scenario, flink_session, job_pipeline, resolve_job
from harness.run.scenario import Scenario
from harness.run.scenario_result import ScenarioResult
from harness.run.session import (
    TRACEBACK,
    Session,
    checked_output,
    checked_store,
    keep_traceback,
    scenario,
    session,
)
from harness.settings import FLINK, from_environment
from harness.subject.code_spec import CodeSpec, resolve_sink
from harness.subject.dependencies import Dependencies
from harness.subject.dependencies import from_environment as environment_dependencies
from harness.subject.pipeline import Pipeline, load_pipeline


@dataclass(frozen=True)
class MatrixRun:
    """What every row of one certification shares: the sink and pipeline, the workload, the stall
    timeout and the live rows' rate (the others drain a backlog)."""

    sink: str
    pipeline: str = field(default_factory=lambda: from_environment("pipeline"))
    seed: int = field(default_factory=lambda: from_environment("seed"))
    records: int = field(default_factory=lambda: from_environment("records"))
    stall_timeout: float = field(default_factory=lambda: from_environment("stall_timeout"))
    rate: float = field(default_factory=lambda: from_environment("live_rate"))
    restarts: int = field(default_factory=lambda: from_environment("restarts"))
    output: str = field(default_factory=lambda: from_environment("output"))  # kafka or delta (harness.output)
    store: str = field(default_factory=lambda: from_environment("store"))  # where a table lives: volume or s3
    dependencies: Dependencies = field(default_factory=environment_dependencies)  # what ships with the sink
    engine_read: bool = field(default_factory=lambda: from_environment("engine_read") == "yes")  # a table's too
    engine: str = field(default_factory=lambda: from_environment("engine"))  # flink: `sink` is a Flink job


@dataclass
class Row:
    """One scenario's outcome in the certificate."""

    scenario: MatrixScenario
    outcome: str  # pass, fail, ineffective, unknown (harness.checker.judge)
    anomalies: dict[str, int]
    seconds: float
    report: str
    error: str | None = None  # why a row is unknown or ineffective
    phases: dict | None = None  # where the time went (harness.run.phases)
    worker: str | None = None  # with --workers: the worker (w0, w1, ...) that ran it, and on which engine
    engine: str | None = None
    ways: list[dict] | None = None  # a class of several ways: each tried (faults, outcome, why), in turn
    started_s: float | None = None  # when spread: seconds from the matrix's start until its worker took it
    beside: list[str] | None = None  # when spread: the rows that ran at the same time on other clusters
    first_try: dict | None = None  # ineffective beside other rows (outcome, why, beside): this row ran again alone


def row_scenario(cluster: Cluster, run: MatrixRun, row: MatrixScenario, name: str | None = None) -> Scenario:
    """The scenario that tries `row` (named after it unless `name` is given): a Flink job's on a Flink cluster."""
    if run.engine == FLINK:
        return flink_scenario(cluster, name or row.name, job=run.sink, faults=row.faults, records=run.records,
                              seed=run.seed, stall_timeout=run.stall_timeout)  # type: ignore[arg-type]
    return scenario(cluster, name or row.name, pipeline=run.pipeline, sink=run.sink, faults=row.faults,
                    records=run.records, seed=run.seed, stall_timeout=run.stall_timeout,
                    state_store=row.state_store, rate=run.rate if row.live else 0.0, speculation=row.speculation,
                    restarts=run.restarts, output=run.output, store=run.store, dependencies=run.dependencies,
                    engine_read=run.engine_read)


def sink_and_pipeline(run: MatrixRun) -> tuple[CodeSpec, Pipeline]:
    """The sink (or Flink job) and the pipeline whose model judges it."""
    if run.engine == FLINK:
        job = resolve_job(run.sink)
        return job, load_pipeline(job_pipeline(job))
    return resolve_sink(run.sink), load_pipeline(run.pipeline)


def checked_subject(run: MatrixRun) -> tuple[CodeSpec, Pipeline]:
    """`sink_and_pipeline(run)`, checked against the output and store before any cluster starts."""
    sink, pipeline = sink_and_pipeline(run)
    if run.engine == FLINK and run.output != "kafka":
        raise BadInput(f"--engine flink writes into Kafka: its jobs have no --output {run.output}")
    checked_output(sink, run.output)
    checked_store(run.output, run.store)
    return sink, pipeline


def matrix_session(run: MatrixRun) -> AbstractContextManager[Session]:
    """The session a matrix's rows run in: a Flink cluster for a Flink job, else Spark's for the run's output."""
    if run.engine == FLINK:
        return flink_session()
    return session(output=run.output, store=run.store, dependencies=run.dependencies)


def run_row(cluster: Cluster, run: MatrixRun, row: MatrixScenario) -> tuple[Row, ScenarioResult | None]:
    """Run one row. An infrastructure failure, or one no one foresaw, is the row's `unknown` (its
    traceback printed and kept in the run's folder), never the end of the matrix; bad input is raised.
    A row whose class has other ways of being tried (`row.ways`) tries the next when one is ineffective
    (a scenario `<row>-way<n>` each); the row says which way made it effective, or that none did and why."""
    tried: list[dict] = []
    ways = ways_of(row, row.name)
    for n, (way, name) in enumerate(ways, start=1):
        outcome, result = _run_once(cluster, run, way, name)
        if row.ways:
            tried.append({"faults": list(way.faults), "outcome": outcome.outcome, "why": outcome.error})
        if outcome.outcome != INEFFECTIVE or n == len(ways):
            break
        say(f"{row.name}: ineffective ({outcome.error}); trying its class another way: {' '.join(ways[n][0].faults)}")
    return replace(outcome, scenario=replace(row, faults=way.faults), ways=tried or None), result


def ways_of(row: MatrixScenario, name: str) -> list[tuple[MatrixScenario, str]]:
    """The scenarios that try a row's class, in turn, with their names: its faults, then each other way."""
    return [(replace(row, faults=faults, ways=()), name if n == 1 else f"{name}-way{n}")
            for n, faults in enumerate((row.faults, *row.ways), start=1)]


def _run_once(cluster: Cluster, run: MatrixRun, row: MatrixScenario, name: str) -> tuple[Row, ScenarioResult | None]:
    started = time.monotonic()
    report = f"{name}/index.html"
    try:
        result = row_scenario(cluster, run, row, name).run()
    except HarnessError as error:
        if error.exit_status != EXIT_INFRASTRUCTURE:
            raise
        return Row(row, UNKNOWN, {}, time.monotonic() - started, report, str(error)), None
    except Exception as error:  # noqa: BLE001 - one row's unforeseen failure is that row's `unknown`
        kept = keep_traceback(error, run_report_dir(cluster.run_id) / name / TRACEBACK)
        say(f"{name}: unexpected error, the row is unknown (traceback: {kept}):\n"
            f"{traceback.format_exc().rstrip()}")
        return Row(row, UNKNOWN, {}, time.monotonic() - started, report,
                   f"unexpected {type(error).__name__}: {error}"), None
    judgement = result.judgement
    assert judgement is not None
    anomalies = {name: a.count for name, a in result.verdict.anomalies.items()}
    why = "; ".join(judgement.reasons) or result.verdict.error
    return Row(row, result.outcome, anomalies, time.monotonic() - started, report, why, result.phases), result


def observed(result: ScenarioResult | None) -> Observation:
    """What a run showed of the sink and pipeline (nothing when it could not run: a plain sink, no state)."""
    return result.observation if result else Observation()


def plan_after_baseline(sink: str, seen: Observation, quick: bool) -> list[MatrixScenario]:
    """The rows that follow the baseline: one for each class of the fault space it showed."""
    plan = rows_for(seen, quick)
    timeout = f", transaction timeout {seen.transaction_timeout_s:g} s" if seen.transaction_timeout_s else ""
    say(f"sink {sink}: observed kind '{seen.kind}'{timeout}{', a stateful pipeline' if seen.stateful else ''}; "
        f"{len(space(seen))} fault classes, {len(plan) + 1} scenarios")
    return plan


def print_row(row: Row, n: int, total: int | None) -> None:
    """One finished row on stdout, as it comes (with the worker that ran it, when spread)."""
    found = ", ".join(f"{k}={v}" for k, v in row.anomalies.items()) or "-"
    ran_by = f"  ({row.worker}{', beside ' + str(len(row.beside)) if row.beside else ''})" if row.worker else ""
    why = f"  ({row.error})" if row.outcome != "pass" and row.error and not row.anomalies else ""
    print(f"[{n}/{total or '?'}] {row.scenario.name:<42} {row.outcome.upper():<11} {row.seconds:6.0f} s  {found}"
          f"{why}{ran_by}", flush=True)
    sys.stdout.flush()
