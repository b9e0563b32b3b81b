"""`python -m harness run`: one scenario end to end (cluster, pipeline, sink, fault schedule) and its report."""

from __future__ import annotations

from pathlib import Path

from harness.cluster import images
from harness.cluster.topology import Cluster
from harness.code_spec import resolve_sink
from harness.errors import EXIT_ANOMALIES, EXIT_INFRASTRUCTURE, EXIT_OK, BadInput
from harness.faults.spec import FaultStep, parse_schedule, random_schedule, schedule_from_json, schedule_to_json
from harness.pipeline import load_pipeline
from harness.report import write_index
from harness.report.folders import run_report_dir
from harness.scenario import Scenario
from harness.smoke import table
from harness.workload import Workload


def schedule(faults: list[str], replay: Path | None, random_steps: int, seed: int, sink: str) -> list[FaultStep]:
    """The steps from specs, a saved schedule, or a seeded random draw (exactly one of them, or none)."""
    if sum(bool(x) for x in (faults, replay, random_steps)) > 1:
        raise BadInput("give --fault, --schedule or --random-faults, not several")
    if replay is not None:
        try:
            return schedule_from_json(replay.read_text())
        except (OSError, ValueError, TypeError) as error:
            raise BadInput(f"schedule file {replay}: {error}") from None
    if random_steps:
        return random_schedule(seed, random_steps, transactional="transactional" in sink)
    return parse_schedule(faults)


def run(pipeline: str, sink: str, faults: list[str], replay: Path | None, random_steps: int, seed: int,
        records: int, name: str, stall_timeout: float, state_store: str = "hdfs", rate: float = 0.0) -> int:
    load_pipeline(pipeline)
    resolve_sink(sink)
    steps = schedule(faults, replay, random_steps, seed, sink)
    images.build_all()
    with Cluster() as cluster:
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
