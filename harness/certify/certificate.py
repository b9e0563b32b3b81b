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
from harness.evidence import write_evidence, write_new_evidence
from harness.faults.space import Observation, space
from harness.output.registry import stores
from harness.subject.code_spec import CodeSpec
from harness.subject.pipeline import Pipeline
from harness.versions import SPARK_VERSIONS, Stack

NOT_TRIED = "not tried"
NO_DEPENDENCIES = {"python": [], "jars": [], "provided_by_image": [], "conf": {}}  # a sink shipped alone
CERTIFICATE = "certificate.json"  # never overwritten: a folder holds one certification's

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


def shard_verdict(shard: dict, rows: list[Row], quick: bool) -> str:
    """A shard's one line: never a certification, whatever it ran; its merge with the others may be."""
    passed = sum(r.outcome == PASS for r in rows)
    return (f"shard {shard['index']}/{shard['count']} of the {'quick' if quick else 'full'} matrix: {passed} of its "
            f"{len(rows)} scenarios passed (not a certification: `certify merge` the shards' folders)")


def write_certificate(folder: Path, sink: CodeSpec, pipeline: Pipeline, seen: Observation, quick: bool, seed: int,
                      rows: list[Row], restarts: int, shard: dict | None = None,
                      spread: list[str] | None = None, store: str = "volume", dependencies: dict | None = None,
                      engine: str = "spark") -> dict:
    """certificate.json, junit.xml and index.html in `folder` (report links are relative to it); the
    certificate as written. A shard's (`shard`: its index, count, observation and workload) certifies
    nothing alone and carries what `certify merge` checks and draws the space from. `spread`: how a run
    decided its clusters (each row says its cluster and the rows beside it). `dependencies`: what shipped with
    the sink besides its code (harness.subject.bundle), part of what is certified. `engine`: the stream engine
    every row ran on (a Flink job is the certificate's `sink`), named with its release."""
    classes = coverage(seen, rows)
    certificate = {
        "engine": engine, "sink": sink.spec, "sink_source_sha256": sink.source_sha256, "sink_kind": seen.kind,
        "output": seen.output,
        **({"store": store} if store != "volume" else {}),
        "transaction_timeout_s": seen.transaction_timeout_s, "brokers": seen.brokers,
        "pipeline": pipeline.name, "pipeline_source_sha256": pipeline.code.source_sha256, "oracle": pipeline.oracle,
        "shipped": {what: code.shipment.to_dict() for what, code in (("sink", sink), ("pipeline", pipeline.code))
                    if code.shipment is not None},  # the bytes every row ran, hashed once, every file of a package
        "dependencies": dependencies or NO_DEPENDENCIES,
        "verdict": shard_verdict(shard, rows, quick) if shard else verdict(classes, rows, quick),
        "certified": certified(classes, rows) and shard is None,
        "matrix": "quick" if quick else "full", "seed": seed,
        "restarts": restarts,  # a failed query's restarts (the supervisor's): 0 certifies without one
        "classes": classes,
        "versions": {"harness": harness.__version__, **versions.stack().described(seen.output, store, engine),
                     "confluent_kafka": version("confluent-kafka")},
        "scenarios": [scenario_entry(r) for r in rows],
        **({"shard": shard} if shard else {}),
        **({"spread": {"clusters": sorted({r.worker for r in rows if r.worker}), "decided": spread}}
           if spread is not None else {}),
    }
    write_certificate_files(folder, certificate)
    return certificate


def scenario_entry(row: Row) -> dict:
    """A row as certificate.json lists it."""
    return {"name": row.scenario.name, "faults": list(row.scenario.faults), "outcome": row.outcome,
            "anomalies": row.anomalies, "seconds": round(row.seconds, 1), "report": row.report, "error": row.error,
            "phases": row.phases, "worker": row.worker, "engine": row.engine,
            **({"started_s": row.started_s, "beside": row.beside or []} if row.started_s is not None else {}),
            **({"first_try": row.first_try} if row.first_try else {}),
            **({"ways": row.ways} if row.ways else {})}


def write_certificate_files(folder: Path, certificate: dict) -> None:
    """The three files of a certificate folder, from the certificate (a run's or a merge of shards')."""
    folder.mkdir(parents=True, exist_ok=True)
    write_new_evidence(folder / CERTIFICATE, json.dumps(certificate, indent=2))
    write_evidence(folder / "junit.xml", _junit(certificate))
    write_evidence(folder / "index.html", _html(certificate))


def _junit(certificate: dict) -> str:
    scenarios = certificate["scenarios"]
    failures = sum(s["outcome"] in (FAIL, INEFFECTIVE) for s in scenarios)
    errors = sum(s["outcome"] == UNKNOWN for s in scenarios)
    cases = []
    for s in scenarios:
        body = ""
        if s["outcome"] == FAIL:
            body = f"<failure message={quoteattr(', '.join(f'{k}={v}' for k, v in s['anomalies'].items()))}/>"
        elif s["outcome"] == INEFFECTIVE:
            why = s["error"] or "the fault did not do what it says"
            body = f"<failure message={quoteattr('ineffective: ' + why)}/>"
        elif s["outcome"] == UNKNOWN:
            body = f"<error message={quoteattr(s['error'] or 'unknown')}/>"
        cases.append(f'<testcase classname={quoteattr(certificate["sink"])} name={quoteattr(s["name"])} '
                     f'time="{s["seconds"]:.1f}">{body}</testcase>')
    return (f'<?xml version="1.0" encoding="utf-8"?><testsuite name={quoteattr("certify " + certificate["sink"])} '
            f'tests="{len(scenarios)}" failures="{failures}" errors="{errors}">{"".join(cases)}</testsuite>\n')


def _html(certificate: dict) -> str:
    rows = "".join(
        f"<tr><td>{escape(s['name'])}</td><td><code>{escape(' '.join(s['faults']) or '(none)')}</code></td>"
        f"<td class={quoteattr(s['outcome'])}>{escape(s['outcome'])}</td>"
        f"<td>{escape(_found(s))}</td><td>{s['seconds']:.0f}&nbsp;s</td><td>{_evidence(s)}</td></tr>"
        for s in certificate["scenarios"]
    )
    classes = "".join(
        f"<tr><td><code>{escape(c['class'])}</code></td><td>{escape(c['what'])}</td>"
        f"<td>{escape(c['row'] or '-')}</td><td class={quoteattr(c['outcome'].replace(' ', '-'))}>"
        f"{escape(c['outcome'])}</td></tr>"
        for c in certificate["classes"]
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>certificate</title><style>"
        "body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px}"
        "table{border-collapse:collapse}.pass{color:#1e8449}.fail{color:#c0392b}.unknown,.ineffective,.not-tried{color:#b9770e}"
        f"</style></head><body><h1>{escape(certificate['sink'])} with pipeline {escape(certificate['pipeline'])}: "
        f"{escape(certificate['verdict'])}</h1>"
        f"<p>engine: {escape(certificate.get('engine', 'spark'))}; "
        f"sink kind: {escape(certificate['sink_kind'])}; output: {escape(certificate['output'])}; "
        f"sink source sha256 "
        f"<code>{escape(certificate['sink_source_sha256'])}</code></p>"
        f"<p>pipeline: {escape(certificate['pipeline'])} ({escape(certificate['oracle'])} oracle); pipeline source "
        f"sha256 <code>{escape(certificate['pipeline_source_sha256'])}</code></p>"
        + "".join(f"<p>{escape(what)} shipped as {escape(s['name'])}, sha256 <code>{escape(s['sha256'])}</code>"
                  f"{_files(s['files'])}</p>" for what, s in certificate["shipped"].items()) +
        f"<p>matrix: {escape(certificate['matrix'])}; Kafka brokers: {escape(str(certificate['brokers']))}; "
        f"seed {escape(str(certificate['seed']))}; versions: "
        f"{escape(_versions(certificate['versions']))}</p>"
        + _dependencies(certificate.get("dependencies") or NO_DEPENDENCIES) + _spread(certificate.get("spread")) +
        "<h2>Fault classes: what was tried</h2>"
        "<table><tr><th>class</th><th>what it tries</th><th>row</th><th>outcome</th></tr>"
        f"{classes}</table><h2>Scenarios</h2>"
        "<table><tr><th>scenario</th><th>faults</th><th>outcome</th><th>anomalies</th><th>time</th><th>evidence</th></tr>"
        f"{rows}</table></body></html>"
    )


def _dependencies(shipped: dict) -> str:
    """What shipped with the sink besides its code, in a paragraph (nothing when nothing did)."""
    items = [f"Python package {w['name']} {w['version']} ({w['file']}, sha256 {w['sha256']})"
             for w in shipped["python"]]
    items += [f"jar {j['coordinate']} ({j['file']}, sha256 {j['sha256']})" for j in shipped["jars"]]
    items += [f"provided by the image, not shipped: {p}" for p in shipped["provided_by_image"]]
    items += [f"Spark setting {key}={value}" for key, value in shipped["conf"].items()]
    if not items:
        return "<p>dependencies shipped with the sink: none</p>"
    return "<p>dependencies shipped with the sink:</p><ul>" + "".join(f"<li>{escape(i)}</li>" for i in items) + "</ul>"


def _spread(spread: dict | None) -> str:
    """The clusters the rows ran on and how they were chosen (a spread run's), in a paragraph."""
    if not spread:
        return ""
    return (f"<p>rows spread over the clusters {escape(', '.join(spread['clusters']))} (each row says the rows "
            f"beside it): {escape('; '.join(spread['decided']))}</p>")


def _files(files: dict[str, str]) -> str:
    """A package's files with their hashes (nothing more for a single file: its hash is the shipment's)."""
    if len(files) < 2:
        return ""
    return "<ul>" + "".join(f"<li>{escape(name)} <code>{escape(sha)}</code></li>" for name, sha in files.items()) \
        + "</ul>"


def _versions(versions: dict[str, str]) -> str:
    """Versions in words: `harness 0.1.0, Kafka 4.1.1, Spark 4.0.0, Delta Lake 4.0.1, PostgreSQL 15, ...`."""
    stacks = [Stack("", spark) for spark in SPARK_VERSIONS]
    names = {"harness": "harness", "kafka": "Kafka", "spark": "Spark", "confluent_kafka": "confluent-kafka",
             **{key: what for store in stores() for stack in stacks for where in store.stores
                for key, (what, _) in (store.versions(stack) | store.servers(stack, where)).items()}}
    return ", ".join(f"{names.get(name, name)} {version}" for name, version in versions.items())


def _found(scenario: dict) -> str:
    """The anomalies counted, or for an unknown or ineffective row why it is so: what a reader looks for first;
    for a class of several ways, the ways tried before the one that counts and why they did not."""
    counted = ", ".join(f"{k}={v}" for k, v in scenario["anomalies"].items())
    found = counted or "-"
    if scenario["outcome"] in (UNKNOWN, INEFFECTIVE) and scenario["error"]:
        found = f"{counted}; {scenario['error']}" if counted else scenario["error"]
    earlier = scenario.get("ways", [])[:-1]
    if earlier:
        tried = "; ".join(f"{' '.join(w['faults'])}: {w['outcome']} ({w['why']})" for w in earlier)
        found += f" (tried first: {tried})"
    return found


def _evidence(scenario: dict) -> str:
    """The link to a scenario's report (none for a row no worker ran), which worker and shard ran it, when it
    started and which rows ran at once with it."""
    link = f"<a href={quoteattr(scenario['report'])}>report</a>" if scenario["report"] else "-"
    ran_by = [f"{scenario['worker']} on {scenario['engine']}"] if scenario["worker"] else []
    ran_by += [f"from {scenario['started_s']:g} s"] if scenario.get("started_s") is not None else []
    ran_by += [f"beside {' '.join(scenario['beside'])}"] if scenario.get("beside") else []
    ran_by += [f"first beside others: {scenario['first_try']['outcome']}, ran again alone"] \
        if scenario.get("first_try") else []
    ran_by += [f"shard {scenario['shard']}"] if scenario.get("shard") else []  # a merged certificate's rows
    return link + (f" ({escape(', '.join(ran_by))})" if ran_by else "")
