"""The certificate of a sink with a pipeline: certificate.json (the fault classes that applied, the row
that tried each and its outcome, the classes not tried; every row, with the worker and engine that ran
it when the matrix was spread), junit.xml for CI, and a page linking each row's report.

"certified" is never wider than what was tried: only a run that tried every applicable class, each a
pass, says so; a quick run says how many classes it passed of how many apply."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import harness
from harness import versions
from harness.certify.rows import Row
from harness.checker.judge import INEFFECTIVE
from harness.checker.verdict import FAIL, PASS, UNKNOWN
from harness.faults.space import Observation, space
from harness.subject.code_spec import CodeSpec
from harness.subject.pipeline import Pipeline

NOT_TRIED = "not tried"

def coverage(seen: Observation, rows: list[Row]) -> list[dict]:
    """Every applicable fault class, the row that tried it and that row's outcome ("not tried" if none)."""
    ran = {r.scenario.name: r for r in rows}
    return [{"class": c.name, "what": c.what, "row": c.row if c.row in ran else None,
             "outcome": ran[c.row].outcome if c.row in ran else NOT_TRIED} for c in space(seen)]


def certified(classes: list[dict], rows: list[Row]) -> bool:
    """Every row passed and every applicable class was tried by one of them."""
    return all(r.outcome == PASS for r in rows) and all(c["outcome"] == PASS for c in classes)


def verdict(classes: list[dict], rows: list[Row], quick: bool) -> str:
    """The certificate's one line: certified only when every applicable class was tried and passed."""
    passed = sum(c["outcome"] == PASS for c in classes)
    untried = sum(c["outcome"] == NOT_TRIED for c in classes)
    if certified(classes, rows):
        return f"certified exactly-once under {passed} of {len(classes)} applicable fault classes"
    if not all(r.outcome == PASS for r in rows):
        return f"not certified (exactly-once under {passed} of {len(classes)} applicable fault classes)"
    if quick:
        return f"quick: passed {passed} of {len(classes)} applicable fault classes (not a certification)"
    return f"not certified: passed {passed} of {len(classes)} applicable fault classes, {untried} not tried"


def write_certificate(folder: Path, sink: CodeSpec, pipeline: Pipeline, seen: Observation, quick: bool, seed: int,
                      rows: list[Row], restarts: int) -> dict:
    """certificate.json, junit.xml and index.html in `folder` (report links are relative to it); the
    certificate as written."""
    folder.mkdir(parents=True, exist_ok=True)
    classes = coverage(seen, rows)
    certificate = {
        "sink": sink.spec, "sink_source_sha256": sink.source_sha256, "sink_kind": seen.kind, "output": seen.output,
        "transaction_timeout_s": seen.transaction_timeout_s, "brokers": seen.brokers,
        "pipeline": pipeline.name, "pipeline_source_sha256": pipeline.code.source_sha256, "oracle": pipeline.oracle,
        "verdict": verdict(classes, rows, quick),
        "certified": certified(classes, rows),
        "matrix": "quick" if quick else "full", "seed": seed,
        "restarts": restarts,  # a failed query's restarts (the supervisor's): 0 certifies without one
        "classes": classes,
        "versions": {"harness": harness.__version__, **versions.stack().described(),
                     "confluent_kafka": version("confluent-kafka")},
        "scenarios": [{"name": r.scenario.name, "faults": list(r.scenario.faults), "outcome": r.outcome,
                       "anomalies": r.anomalies, "seconds": round(r.seconds, 1), "report": r.report,
                       "error": r.error, "phases": r.phases, "worker": r.worker, "engine": r.engine,
                       **({"ways": r.ways} if r.ways else {})}
                      for r in rows],
    }
    (folder / "certificate.json").write_text(json.dumps(certificate, indent=2))
    (folder / "junit.xml").write_text(_junit(sink, rows))
    (folder / "index.html").write_text(_html(certificate))
    return certificate


def _junit(sink: CodeSpec, rows: list[Row]) -> str:
    failures = sum(r.outcome in (FAIL, INEFFECTIVE) for r in rows)
    errors = sum(r.outcome == UNKNOWN for r in rows)
    cases = []
    for r in rows:
        body = ""
        if r.outcome == FAIL:
            body = f"<failure message={quoteattr(', '.join(f'{k}={v}' for k, v in r.anomalies.items()))}/>"
        elif r.outcome == INEFFECTIVE:
            body = f"<failure message={quoteattr('ineffective: ' + (r.error or 'the fault did not do what it says'))}/>"
        elif r.outcome == UNKNOWN:
            body = f"<error message={quoteattr(r.error or 'unknown')}/>"
        cases.append(f'<testcase classname={quoteattr(sink.spec)} name={quoteattr(r.scenario.name)} '
                     f'time="{r.seconds:.1f}">{body}</testcase>')
    return (f'<?xml version="1.0" encoding="utf-8"?><testsuite name={quoteattr("certify " + sink.spec)} '
            f'tests="{len(rows)}" failures="{failures}" errors="{errors}">{"".join(cases)}</testsuite>\n')


def _html(certificate: dict) -> str:
    rows = "".join(
        f"<tr><td>{escape(s['name'])}</td><td><code>{escape(' '.join(s['faults']) or '(none)')}</code></td>"
        f"<td class='{escape(s['outcome'])}'>{escape(s['outcome'])}</td>"
        f"<td>{escape(_found(s))}</td><td>{s['seconds']:.0f}&nbsp;s</td><td>{_evidence(s)}</td></tr>"
        for s in certificate["scenarios"]
    )
    classes = "".join(
        f"<tr><td><code>{escape(c['class'])}</code></td><td>{escape(c['what'])}</td>"
        f"<td>{escape(c['row'] or '-')}</td><td class='{escape(c['outcome'].replace(' ', '-'))}'>"
        f"{escape(c['outcome'])}</td></tr>"
        for c in certificate["classes"]
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>certificate</title><style>"
        "body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px}"
        "table{border-collapse:collapse}.pass{color:#1e8449}.fail{color:#c0392b}.unknown,.ineffective,.not-tried{color:#b9770e}"
        f"</style></head><body><h1>{escape(certificate['sink'])} with pipeline {escape(certificate['pipeline'])}: "
        f"{escape(certificate['verdict'])}</h1>"
        f"<p>sink kind: {escape(certificate['sink_kind'])}; output: {escape(certificate['output'])}; "
        f"sink source sha256 "
        f"<code>{escape(certificate['sink_source_sha256'])}</code></p>"
        f"<p>pipeline: {escape(certificate['pipeline'])} ({escape(certificate['oracle'])} oracle); pipeline source "
        f"sha256 <code>{escape(certificate['pipeline_source_sha256'])}</code></p>"
        f"<p>matrix: {escape(certificate['matrix'])}; Kafka brokers: {certificate['brokers']}; "
        f"seed {certificate['seed']}; versions: "
        f"{escape(_versions(certificate['versions']))}</p>"
        "<h2>Fault classes: what was tried</h2>"
        "<table><tr><th>class</th><th>what it tries</th><th>row</th><th>outcome</th></tr>"
        f"{classes}</table><h2>Scenarios</h2>"
        "<table><tr><th>scenario</th><th>faults</th><th>outcome</th><th>anomalies</th><th>time</th><th>evidence</th></tr>"
        f"{rows}</table></body></html>"
    )


def _versions(versions: dict[str, str]) -> str:
    """Versions in words: `harness 0.1.0, Kafka 4.1.1, Spark 4.0.0, Delta Lake 4.0.1, confluent-kafka 2.16.1`."""
    names = {"harness": "harness", "kafka": "Kafka", "spark": "Spark", "delta": "Delta Lake",
             "confluent_kafka": "confluent-kafka"}
    return ", ".join(f"{names.get(name, name)} {version}" for name, version in versions.items())


def _found(scenario: dict) -> str:
    """The anomalies counted, or for an unknown or ineffective row why it is so: what a reader looks for first."""
    counted = ", ".join(f"{k}={v}" for k, v in scenario["anomalies"].items())
    if scenario["outcome"] in (UNKNOWN, INEFFECTIVE) and scenario["error"]:
        return f"{counted}; {scenario['error']}" if counted else scenario["error"]
    return counted or "-"


def _evidence(scenario: dict) -> str:
    """The link to a scenario's report (none for a row no worker ran), and which worker ran it."""
    link = f"<a href={quoteattr(scenario['report'])}>report</a>" if scenario["report"] else "-"
    return link + (f" ({escape(scenario['worker'])} on {escape(scenario['engine'])})" if scenario["worker"] else "")
