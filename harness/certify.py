"""`python -m harness certify`: run the matrix for one sink on one cluster (or spread over several worker
processes, harness.certify_pool), print verdicts as they come, write a certificate folder (index.html,
certificate.json, JUnit XML). Exit 0 only when every scenario passed and none was vacuous."""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from harness.cluster import images
from harness.cluster.engine import engine_socket_url
from harness.cluster.topology import Cluster
from harness.code_spec import SinkSpec, resolve_sink
from harness.errors import EXIT_ANOMALIES, EXIT_INFRASTRUCTURE, EXIT_OK, HarnessError
from harness.faults.spec import parse_schedule
from harness.matrix import ANY, LIVE_RATE, MATRIX, MatrixScenario, kind_from_points, scenarios_for
from harness.pipeline import Pipeline, load_pipeline
from harness.progress import say
from harness.report import write_index
from harness.report.certificate import write_certificate
from harness.report.folders import certificate_dir, run_report_dir
from harness.scenario import Scenario, ScenarioResult
from harness.workload import Workload


@dataclass
class Row:
    """One scenario's outcome in the certificate."""

    scenario: MatrixScenario
    outcome: str  # pass, fail, unknown
    anomalies: dict[str, int]
    seconds: float
    report: str
    error: str | None = None
    phases: dict | None = None  # where the time went (harness.phases)
    worker: str | None = None  # with --workers: the worker (w0, w1, ...) that ran it, and on which engine
    engine: str | None = None


def run_scenario(cluster: Cluster, sink: SinkSpec, row: MatrixScenario, seed: int, records: int,
                 pipeline: str, stall_timeout: float, rate: float) -> tuple[Row, ScenarioResult | None]:
    started = time.monotonic()
    try:
        result = Scenario(cluster, row.name, pipeline=pipeline, sink=sink, faults=parse_schedule(list(row.faults)),
                          workload=Workload(records, seed=seed), stall_timeout=stall_timeout,
                          state_store=row.state_store, rate=rate if row.live else 0.0).run()
    except HarnessError as error:
        if error.exit_status != EXIT_INFRASTRUCTURE:
            raise
        return Row(row, "unknown", {}, time.monotonic() - started, f"{row.name}/index.html", str(error)), None
    except Exception as error:  # noqa: BLE001 - one row's unforeseen failure is that row's `unknown`, not the end of the matrix
        say(f"{row.name}: unexpected error, the row is unknown:\n{traceback.format_exc().rstrip()}")
        return Row(row, "unknown", {}, time.monotonic() - started, f"{row.name}/index.html",
                   f"unexpected {type(error).__name__}: {error}"), None
    anomalies = {name: a.count for name, a in result.verdict.anomalies.items()}
    return Row(row, result.verdict.outcome, anomalies, time.monotonic() - started, f"{row.name}/index.html",
               result.verdict.error, result.phases), result


def observed(result: ScenarioResult | None) -> tuple[str, bool]:
    """The sink's kind and whether the pipeline keeps state, as the baseline showed them (plain and
    stateless when it showed nothing)."""
    return (result.sink_kind if result else kind_from_points(set())), bool(result and result.stateful)


def plan_after_baseline(sink: SinkSpec, kind: str, stateful: bool, quick: bool) -> list[MatrixScenario]:
    """The rows that follow the baseline, for the kind of sink and pipeline it showed."""
    plan = scenarios_for(kind, quick, stateful)[1:]
    say(f"sink {sink.spec}: observed kind '{kind}'{', a stateful pipeline' if stateful else ''}; "
        f"{len(plan) + 1} scenarios")
    return plan


def certify(sink_spec: str, quick: bool, seed: int, records: int, pipeline: str = "passthrough",
            out: Path | None = None, stall_timeout: float = 180.0, rate: float = LIVE_RATE,
            dry_run: bool = False, workers: int = 1, docker_hosts: str = "") -> int:
    from harness import certify_pool, certify_worker  # they run rows with this module's helpers

    engines = certify_pool.worker_engines(workers, docker_hosts, engine_socket_url())
    loaded = load_pipeline(pipeline)
    sink = resolve_sink(sink_spec)
    if dry_run:
        print_plan(sink, loaded, quick)
        if workers > 1:
            print("\n".join(certify_pool.spread_note(engines)))
        return EXIT_OK
    started = time.monotonic()
    if workers > 1:
        job = certify_worker.CertifyJob(sink_spec, pipeline, seed, records, stall_timeout, rate)
        folder, kind, rows = certify_pool.certify_spread(job, sink, engines, quick, out)
    else:
        if docker_hosts:  # one worker: the first engine, as worker 0 of a spread run
            os.environ["DOCKER_HOST"] = engines[0]
        folder, kind, rows = _on_one_cluster(sink, quick, seed, records, pipeline, out, stall_timeout, rate)
    write_certificate(folder, sink, loaded, kind, quick, seed, rows)
    print(f"certificate: {folder}/certificate.json, {folder}/index.html, {folder}/junit.xml")
    passed = sum(r.outcome == "pass" for r in rows)
    minutes, secs = divmod(round(time.monotonic() - started), 60)
    print(f"{sink.spec}: {'certified exactly-once' if passed == len(rows) else 'not certified'}, "
          f"{passed}/{len(rows)} scenarios passed, {'quick' if quick else 'full'} matrix, {minutes} min {secs} s")
    if any(r.outcome == "unknown" for r in rows):
        return EXIT_INFRASTRUCTURE
    return EXIT_OK if all(r.outcome == "pass" for r in rows) else EXIT_ANOMALIES


def _on_one_cluster(sink: SinkSpec, quick: bool, seed: int, records: int, pipeline: str, out: Path | None,
                    stall_timeout: float, rate: float) -> tuple[Path, str, list[Row]]:
    """Every row in turn on one cluster in this process: the certificate folder, the sink's kind, the rows."""
    images.build_all()
    rows: list[Row] = []
    with Cluster() as cluster:
        folder = out or certificate_dir(cluster.run_id)
        try:
            baseline, result = run_scenario(cluster, sink, scenarios_for("any", True)[0], seed, records, pipeline,
                                            stall_timeout, rate)
            rows.append(baseline)
            print_row(baseline, 1, None)
            kind, stateful = observed(result)
            plan = plan_after_baseline(sink, kind, stateful, quick)
            for n, row in enumerate(plan, start=2):
                outcome, _ = run_scenario(cluster, sink, row, seed, records, pipeline, stall_timeout, rate)
                rows.append(outcome)
                print_row(outcome, n, len(plan) + 1)
        finally:
            cluster.save_logs(run_report_dir(cluster.run_id) / "cluster-logs")
            write_index(run_report_dir(cluster.run_id))
    for row in rows:  # linked from the certificate folder, which --out puts elsewhere than the run's reports
        row.report = os.path.relpath(run_report_dir(cluster.run_id) / row.report, folder)
    return folder, kind, rows


def print_plan(sink: SinkSpec, pipeline: Pipeline, quick: bool) -> None:
    """The rows a certification would run: the baseline first, then those that apply to the kind of sink
    it shows (transactional or plain), and the state rows when the pipeline keeps state."""
    print(f"{sink.spec} with pipeline {pipeline.name}, {'quick' if quick else 'full'} matrix "
          "(the baseline shows the sink's kind;\n"
          "the rows for the other kind are left out, the state rows run only when the pipeline keeps state):")
    for row in [r for r in MATRIX if r.quick or not quick]:
        applies = "stateful pipelines" if row.stateful else {ANY: "every sink"}.get(row.applies_to,
                                                                                     f"{row.applies_to} sinks")
        print(f"  {row.name:<48} {' '.join(row.faults) or '(no fault)':<36} {applies}")


def print_row(row: Row, n: int, total: int | None) -> None:
    """One finished row on stdout, as it comes (with the worker that ran it, when spread)."""
    found = ", ".join(f"{k}={v}" for k, v in row.anomalies.items()) or "-"
    ran_by = f"  ({row.worker})" if row.worker else ""
    print(f"[{n}/{total or '?'}] {row.scenario.name:<42} {row.outcome.upper():<8} {row.seconds:6.0f} s  {found}"
          f"{ran_by}", flush=True)
    sys.stdout.flush()
