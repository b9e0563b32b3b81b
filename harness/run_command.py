"""`python -m harness run`: one scenario end to end (cluster, pipeline, sink, fault schedule) and its report."""

from __future__ import annotations

from pathlib import Path

from harness.cluster import images
from harness.cluster.topology import Cluster
from harness.code_spec import resolve_sink
from harness.errors import EXIT_ANOMALIES, EXIT_INFRASTRUCTURE, EXIT_OK, BadInput
from harness.faults.spec import FaultStep, parse_schedule, random_schedule, schedule_from_json, schedule_to_json
from harness.matrix import TRANSACTIONAL
from harness.pipeline import load_pipeline
from harness.progress import say
from harness.report import write_index
from harness.report.folders import run_report_dir
from harness.scenario import Scenario
from harness.smoke import table
from harness.workload import Workload


def schedule(faults: list[str], replay: Path | None, random_steps: int) -> list[FaultStep]:
    """The steps from specs or a saved schedule (a random draw waits for the sink's baseline)."""
    if sum(bool(x) for x in (faults, replay, random_steps)) > 1:
        raise BadInput("give --fault, --schedule or --random-faults, not several")
    if replay is not None:
        try:
            return schedule_from_json(replay.read_text())
        except (OSError, ValueError, TypeError) as error:
            raise BadInput(f"schedule file {replay}: {error}") from None
    return parse_schedule(faults)


def observed_kind(cluster: Cluster, name: str, pipeline: str, sink: str, records: int, seed: int,
                  stall_timeout: float, state_store: str) -> str:
    """Whether the sink writes in transactions, seen at the gate in a fault-free run (as certify does)."""
    baseline = Scenario(cluster, f"{name}-baseline", pipeline=pipeline, sink=sink,
                        workload=Workload(records, seed=seed), stall_timeout=stall_timeout,
                        state_store=state_store).run()
    kind = baseline.sink_kind
    say(f"sink {sink}: observed kind '{kind}' in its baseline; drawing {kind} fault points")
    return kind


def run(pipeline: str, sink: str, faults: list[str], replay: Path | None, random_steps: int, seed: int,
        records: int, name: str, stall_timeout: float, state_store: str = "hdfs", rate: float = 0.0) -> int:
    load_pipeline(pipeline)
    resolve_sink(sink)
    steps = schedule(faults, replay, random_steps)
    images.build_all()
    with Cluster() as cluster:
        if random_steps:
            kind = observed_kind(cluster, name, pipeline, sink, records, seed, stall_timeout, state_store)
            steps = random_schedule(seed, random_steps, transactional=kind == TRANSACTIONAL)
        scenario = Scenario(cluster, name, pipeline=pipeline, sink=sink, faults=steps,
                            workload=Workload(records, seed=seed), stall_timeout=stall_timeout,
                            state_store=state_store, rate=rate)
        (scenario.report_dir / "schedule.json").write_text(schedule_to_json(steps))
        try:
            result = scenario.run()
        finally:
            cluster.save_logs(run_report_dir(cluster.run_id) / name / "logs")
            write_index(run_report_dir(cluster.run_id))
    print(table([result]))
    print(f"report: {result.report_dir}/index.html")
    return {"pass": EXIT_OK, "fail": EXIT_ANOMALIES}.get(result.verdict.outcome, EXIT_INFRASTRUCTURE)
