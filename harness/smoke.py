"""`python -m harness smoke`: bring the cluster up, run the passthrough scenario, print a result table."""

from __future__ import annotations

from harness.cluster.topology import Cluster
from harness.errors import EXIT_ANOMALIES, EXIT_OK
from harness.pipeline import load_pipeline
from harness.report import write_index
from harness.report.folders import run_report_dir
from harness.scenario import Scenario, ScenarioResult
from harness.workload import Workload


def table(results: list[ScenarioResult]) -> str:
    """A plain-text table: one row per scenario."""
    header = f"{'scenario':<14} {'verdict':<8} {'guarantee':<14} {'expected':>9} {'read':>9} {'anomalies'}"
    rows = [header, "-" * len(header)]
    for r in results:
        found = ", ".join(f"{a.name}={a.count}" for a in r.verdict.anomalies.values()) or "-"
        rows.append(
            f"{r.name:<14} {r.verdict.outcome:<8} {r.verdict.guarantee:<14} "
            f"{r.verdict.expected:>9} {r.verdict.observed:>9} {found}"
        )
    return "\n".join(rows)


def run(pipeline: str, records: int, partitions: int) -> int:
    load_pipeline(pipeline)
    with Cluster() as cluster:
        try:
            scenario = Scenario(cluster, "smoke", pipeline=pipeline, workload=Workload(records), partitions=partitions)
            result = scenario.run()
        finally:
            cluster.save_logs(run_report_dir(cluster.run_id) / "cluster")
            write_index(run_report_dir(cluster.run_id))
    print(table([result]))
    print(f"report: {result.report_dir}/index.html")
    return EXIT_OK if result.verdict.outcome == "pass" else EXIT_ANOMALIES
