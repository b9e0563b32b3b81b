"""`python -m harness certify`: run the matrix for one sink on one cluster, print verdicts as they come,
write a certificate folder (index.html, certificate.json, JUnit XML). Exit 0 only when every scenario
passed and none was vacuous."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import harness
from harness import versions
from harness.cluster import images
from harness.cluster.topology import Cluster
from harness.code_spec import SinkSpec, resolve_sink
from harness.errors import EXIT_ANOMALIES, EXIT_INFRASTRUCTURE, EXIT_OK, HarnessError
from harness.faults.spec import parse_schedule
from harness.matrix import ANY, LIVE_RATE, MATRIX, MatrixScenario, kind_from_points, scenarios_for
from harness.pipeline import Pipeline, load_pipeline
from harness.progress import say
from harness.report import write_index
from harness.report.folders import run_report_dir
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
    anomalies = {name: a.count for name, a in result.verdict.anomalies.items()}
    return Row(row, result.verdict.outcome, anomalies, time.monotonic() - started, f"{row.name}/index.html",
               result.verdict.error, result.phases), result


def certify(sink_spec: str, quick: bool, seed: int, records: int, pipeline: str = "passthrough",
            out: Path | None = None, stall_timeout: float = 180.0, rate: float = LIVE_RATE,
            dry_run: bool = False) -> int:
    loaded = load_pipeline(pipeline)
    sink = resolve_sink(sink_spec)
    if dry_run:
        print_plan(sink, loaded, quick)
        return EXIT_OK
    started = time.monotonic()
    images.build_all()
    rows: list[Row] = []
    with Cluster() as cluster:
        folder = out or run_report_dir(cluster.run_id)
        try:
            baseline, result = run_scenario(cluster, sink, scenarios_for("any", True)[0], seed, records, pipeline,
                                            stall_timeout, rate)
            rows.append(baseline)
            _print_row(baseline, 1, None)
            kind = result.sink_kind if result else kind_from_points(set())
            stateful = bool(result and result.stateful)
            plan = scenarios_for(kind, quick, stateful)[1:]
            say(f"sink {sink.spec}: observed kind '{kind}'{', a stateful pipeline' if stateful else ''}; "
                f"{len(plan) + 1} scenarios")
            for n, row in enumerate(plan, start=2):
                outcome, _ = run_scenario(cluster, sink, row, seed, records, pipeline, stall_timeout, rate)
                rows.append(outcome)
                _print_row(outcome, n, len(plan) + 1)
        finally:
            cluster.save_logs(run_report_dir(cluster.run_id) / "cluster-logs")
            write_index(run_report_dir(cluster.run_id))
    write_certificate(folder, sink, loaded, kind, quick, seed, rows)
    print(f"certificate: {folder}/certificate.json, {folder}/index.html, {folder}/junit.xml")
    passed = sum(r.outcome == "pass" for r in rows)
    minutes, secs = divmod(round(time.monotonic() - started), 60)
    print(f"{sink.spec}: {'certified exactly-once' if passed == len(rows) else 'not certified'}, "
          f"{passed}/{len(rows)} scenarios passed, {'quick' if quick else 'full'} matrix, {minutes} min {secs} s")
    if any(r.outcome == "unknown" for r in rows):
        return EXIT_INFRASTRUCTURE
    return EXIT_OK if all(r.outcome == "pass" for r in rows) else EXIT_ANOMALIES


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


def _print_row(row: Row, n: int, total: int | None) -> None:
    found = ", ".join(f"{k}={v}" for k, v in row.anomalies.items()) or "-"
    print(f"[{n}/{total or '?'}] {row.scenario.name:<42} {row.outcome.upper():<8} {row.seconds:6.0f} s  {found}",
          flush=True)
    sys.stdout.flush()


def write_certificate(folder: Path, sink: SinkSpec, pipeline: Pipeline, kind: str, quick: bool, seed: int,
                      rows: list[Row]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    passed = all(r.outcome == "pass" for r in rows)
    certificate = {
        "sink": sink.spec, "sink_source_sha256": sink.source_sha256, "sink_kind": kind,
        "pipeline": pipeline.name, "pipeline_source_sha256": pipeline.code.source_sha256, "oracle": pipeline.oracle,
        "verdict": "certified exactly-once" if passed else "not certified",
        "matrix": "quick" if quick else "full", "seed": seed,
        "versions": {"harness": harness.__version__, **asdict(versions.stack()),
                     "confluent_kafka": version("confluent-kafka")},
        "scenarios": [{"name": r.scenario.name, "faults": list(r.scenario.faults), "outcome": r.outcome,
                       "anomalies": r.anomalies, "seconds": round(r.seconds, 1), "report": r.report,
                       "error": r.error, "phases": r.phases} for r in rows],
    }
    (folder / "certificate.json").write_text(json.dumps(certificate, indent=2))
    (folder / "junit.xml").write_text(_junit(sink, rows))
    (folder / "index.html").write_text(_html(certificate))


def _junit(sink: SinkSpec, rows: list[Row]) -> str:
    failures = sum(r.outcome == "fail" for r in rows)
    errors = sum(r.outcome == "unknown" for r in rows)
    cases = []
    for r in rows:
        body = ""
        if r.outcome == "fail":
            body = f"<failure message={quoteattr(', '.join(f'{k}={v}' for k, v in r.anomalies.items()))}/>"
        elif r.outcome == "unknown":
            body = f"<error message={quoteattr(r.error or 'unknown')}/>"
        cases.append(f'<testcase classname={quoteattr(sink.spec)} name={quoteattr(r.scenario.name)} '
                     f'time="{r.seconds:.1f}">{body}</testcase>')
    return (f'<?xml version="1.0" encoding="utf-8"?><testsuite name={quoteattr("certify " + sink.spec)} '
            f'tests="{len(rows)}" failures="{failures}" errors="{errors}">{"".join(cases)}</testsuite>\n')


def _html(certificate: dict) -> str:
    rows = "".join(
        f"<tr><td>{escape(s['name'])}</td><td><code>{escape(' '.join(s['faults']) or '(none)')}</code></td>"
        f"<td class='{escape(s['outcome'])}'>{escape(s['outcome'])}</td>"
        f"<td>{escape(', '.join(f'{k}={v}' for k, v in s['anomalies'].items()) or '-')}</td>"
        f"<td><a href='{escape(s['report'])}'>report</a></td></tr>"
        for s in certificate["scenarios"]
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>certificate</title><style>"
        "body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px}"
        "table{border-collapse:collapse}.pass{color:#1e8449}.fail{color:#c0392b}.unknown{color:#b9770e}"
        f"</style></head><body><h1>{escape(certificate['sink'])}: {escape(certificate['verdict'])}</h1>"
        f"<p>pipeline: {escape(certificate['pipeline'])} ({escape(certificate['oracle'])} oracle); "
        f"kind: {escape(certificate['sink_kind'])}; matrix: {escape(certificate['matrix'])}; seed "
        f"{certificate['seed']}; source sha256 <code>{escape(certificate['sink_source_sha256'])}</code>; "
        f"versions: {escape(json.dumps(certificate['versions']))}</p>"
        "<table><tr><th>scenario</th><th>faults</th><th>verdict</th><th>anomalies</th><th>evidence</th></tr>"
        f"{rows}</table></body></html>"
    )
