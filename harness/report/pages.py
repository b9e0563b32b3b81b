"""HTML pages of a run: one per scenario (summary, timeline, anomaly tables), an index of verdicts.

Every record content and every string from a log or a topic is escaped.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from harness.checker.verdict import MEANINGS
from harness.client.records import Records
from harness.evidence import write_evidence
from harness.report.events import events_html
from harness.report.swimlanes import swimlanes_svg
from harness.report.timeline import timeline_svg

STYLE = """
body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}th{background:#f3f3f3}
.pass{color:#1e8449;font-weight:bold}.fail{color:#c0392b;font-weight:bold}.unknown,.ineffective{color:#b9770e;font-weight:bold}
code{background:#f6f6f6;padding:1px 3px}
"""


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    )


def _cell(value: object) -> str:
    return escape(json.dumps(value) if isinstance(value, (dict, list)) else str(value))


def _table(rows: list[dict]) -> str:
    if not rows:
        return ""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(row.get(c, ''))}</td>" for c in columns) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _explanations(examples: list[dict]) -> str:
    """What happened to each example, from the broker's log (harness.run.explain)."""
    items = "".join(f"<li><code>{escape(str(e.get('id', '')))}</code>: {escape(e['explanation'])}</li>"
                    for e in examples if "explanation" in e)
    if not items:
        return ""
    return f"<p>What happened to them (the broker's log and the history):</p><ul class='why'>{items}</ul>"


def _latency(result: dict) -> dict | None:
    return result.get("input", {}).get("latency")


def _input(result: dict) -> str:
    """Backlog, or live at a rate with the end-to-end latency measured."""
    rate = result.get("input", {}).get("rate", "backlog")
    if rate == "backlog":
        return "backlog (produced before the stream started)"
    latency = _latency(result)
    if not latency:
        return f"live at {rate:g} records/s; latency not measured (outputs are not input records)"
    return (f"live at {rate:g} records/s; latency (input acked to output written) median "
            f"{latency['median_ms'] / 1000:.2f} s, p99 {latency['p99_ms'] / 1000:.2f} s (orange line)")


def write_scenario_page(folder: Path, result: dict, records: Records, events: list[dict]) -> Path:
    """`folder/index.html` for one scenario, from its result, its output and its history's events (sends
    left out: they are the input, not the story)."""
    verdict = result["verdict"]
    # when the anomalies' example records were written: a map of every record's time would be the
    # largest thing a million-record run holds after its read
    places = {(e.get("partition"), e.get("offset")) for a in verdict["anomalies"].values() for e in a["examples"]}
    written = {(r.partition(), r.offset()): r.timestamp()[1] for r in records
               if places and (r.partition(), r.offset()) in places}
    outcome = result.get("outcome", verdict["outcome"])  # the judge's (harness.checker.judge)
    summary = _table(
        [
            {"outcome": outcome, "why": "; ".join(result.get("reasons", [])) or "-",
             "observed guarantee": verdict["guarantee"], "oracle": verdict.get("oracle", "model"),
             "expected": verdict["expected"],
             "read": verdict["observed"], "distinct": verdict["distinct"],
             "aborted (read_uncommitted only)": result["read"]["aborted"],
             "batches committed": len(result["batches"]["committed"]), "input": _input(result)}
        ]
    )
    anomalies = "".join(
        f"<h3>{escape(name)}: {anomaly['count']}</h3><p>{escape(MEANINGS.get(name, ''))}</p>"
        + _table([{k: v for k, v in e.items() if k != "explanation"} for e in anomaly["examples"]])
        + _explanations(anomaly["examples"])
        for name, anomaly in verdict["anomalies"].items()
    ) or "<p>No anomalies.</p>"
    log_files = sorted((folder / "logs").glob("*.log"))
    logs = "".join(f'<li><a href="logs/{escape(p.name)}">{escape(p.name)}</a></li>' for p in log_files)
    body = (
        f"<h1>Scenario {escape(result['scenario'])}: "
        f"<span class='{escape(outcome)}'>{escape(outcome.upper())}</span></h1>"
        + (f"<p class='unknown'>error: {escape(verdict['error'])}</p>" if verdict.get("error") else "")
        + summary
        + (f"<p class='engine-read'>{escape(result['engine_read']['said'])}</p>" if result.get("engine_read") else "")
        + "<h2>Swimlanes</h2><p>A lane per container: transactions from first write to commit (green), "
        "abort (red) or never ended (orange); plain produce requests as grey ticks; container starts as "
        "dark flags; faults shaded where they hit (a Kafka node's on the broker it was aimed at). Brokers: a "
        "partition's new leader (purple) or a new transaction coordinator (orange) marked on the broker that "
        "took over. Batches: planned (grey), state saved (blue), committed "
        "(green). Anomalies: red dots in the output lane, when their record was written. Hover for details.</p>"
        + swimlanes_svg(events, verdict["anomalies"], written)
        + "<h2>Output over time</h2><p>Output records per second (broker timestamps), committed batches "
        "(dashed), fault windows (shaded), events (red dots).</p>"
        + timeline_svg(records.timestamps, events, (_latency(result) or {}).get("per_second"))
        + "<h2>Anomalies</h2>" + anomalies
        + "<h2>Events</h2><p>By type, in plain words: open a type to see its events.</p>" + events_html(events)
        + "<h2>Files</h2><ul><li><a href='history.jsonl'>history.jsonl</a></li>"
        "<li><a href='result.json'>result.json</a></li>" + logs + "</ul>"
    )
    page = folder / "index.html"
    write_evidence(page, _page(f"scenario {result['scenario']}", body))
    return page


def write_index(run_folder: Path, parts: list[Path] | None = None) -> Path:
    """`reports/<run>/index.html`: every scenario of the run with its verdict; with `parts`, of several
    runs (the workers of one pytest-xdist session), each with the engine it ran on."""
    rows = []
    stacks = set()
    engines = []
    for part in parts or [run_folder]:
        prefix = "" if part == run_folder else f"../{part.name}/"
        if (part / "run.json").exists():
            engines.append(f"{part.name}: engine {json.loads((part / 'run.json').read_text())['engine']}")
        for result_file in sorted(part.glob("*/result.json")):
            result = json.loads(result_file.read_text())
            rows.append((prefix + result_file.parent.name, result_file.parent.name,
                         result.get("outcome", result["verdict"]["outcome"]), result["verdict"]))
            stacks.add(", ".join(f"{k} {v}" for k, v in sorted(result.get("versions", {}).items())))
    body = "<h1>Run " + escape(run_folder.name) + "</h1>" \
        + "".join(f"<p>versions: {escape(stack)}</p>" for stack in sorted(stacks) if stack) \
        + "".join(f"<p>{escape(line)}</p>" for line in engines) \
        + "<table><tr><th>scenario</th><th>outcome</th><th>guarantee</th><th>anomalies</th></tr>"
    for link, name, outcome, verdict in rows:
        found = ", ".join(f"{k}={v['count']}" for k, v in verdict["anomalies"].items()) or "-"
        body += (
            f"<tr><td><a href='{escape(link)}/index.html'>{escape(name)}</a></td>"
            f"<td class='{escape(outcome)}'>{escape(outcome)}</td>"
            f"<td>{escape(verdict['guarantee'])}</td><td>{escape(found)}</td></tr>"
        )
    run_folder.mkdir(parents=True, exist_ok=True)
    page = run_folder / "index.html"
    write_evidence(page, _page(f"run {run_folder.name}", body + "</table>"))
    return page
