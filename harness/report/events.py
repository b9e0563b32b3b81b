"""The scenario's events in plain words, grouped by type (a <details> per type: open the ones you
want, no JavaScript), each at its time since the scenario started."""

from __future__ import annotations

from collections import defaultdict
from html import escape

SHOWN_PER_TYPE = 300


def describe(event: dict) -> str:
    """One event as a sentence."""
    kind = event["type"]
    match kind:
        case "batch.planned":
            return f"batch {event.get('batch')} planned (its offsets written)"
        case "batch.committed":
            return f"batch {event.get('batch')} committed (commits/{event.get('batch')} written)"
        case "state.committed":
            return f"batch {event.get('batch')}'s state store version written"
        case "point" if event.get("point") == "pg.commit":
            if event.get("phase") == "response":
                outcome = "committed" if event.get("committed") else f"not committed ({event.get('error')})"
                return f"{event.get('container')}'s PostgreSQL {event.get('how')} answered: {outcome}"
            return f"{event.get('container')} sent a PostgreSQL {event.get('how')} ({event.get('statement')})"
        case "point":
            txn = f" for {event['transactional_id']}" if event.get("transactional_id") else ""
            return f"{event.get('container')} reached {event.get('point')}{txn}"
        case "trigger":
            return f"fault step {event.get('step')} triggered at {event.get('point')}"
        case "fault.inject":
            return f"fault {event.get('fault')} injected"
        case "fault.target":
            return f"fault {event.get('fault')} aimed at {event.get('container')}: {event.get('why')}"
        case "kafka.leader":
            if event.get("was") is None:
                return f"{event.get('leader')} leads {event.get('partition')}"
            return (f"{event.get('leader')} took {event.get('partition')} over from {event.get('was')}"
                    + (" (the coordinator of its transactional ids)" if event.get("role") == "coordinator" else ""))
        case "kafka.in_sync":
            return f"every Kafka replica in sync again, {event.get('seconds')} s after healing"
        case "effect":
            return f"fault {event.get('fault')} took effect: {event.get('effect')}"
        case "s3.overwrite":
            return (f"{event.get('by')} wrote {event.get('key')} again (first written by {event.get('first_by')}): "
                    "the S3 server replaced it")
        case "fault.heal" | "recovery":
            return f"fault {event.get('fault')} healed: {event.get('detail', '')}".rstrip(": ")
        case "hold" | "release" | "drop":
            verb = {"hold": "held", "release": "released", "drop": "dropped"}[kind]
            return f"{event.get('what')} from {event.get('container')} at {event.get('point')} {verb}"
        case "container.start":
            return f"{event.get('container')} started (restart {event.get('restart', 0)})"
        case "container.remove":
            return f"{event.get('container')} removed"
        case "read":
            return f"output read: {event.get('records')} records, {event.get('aborted')} in aborted transactions"
        case "verdict":
            return f"verdict: {event.get('outcome')}, {event.get('guarantee')}"
        case "incomplete":
            return f"incomplete: {event.get('reason')}"
        case "query.failed":
            batch = f" in batch {event['batch']}" if event.get("batch") is not None else ""
            return (f"the query failed on its own{batch} (failure {event.get('failure')}); the driver's log says: "
                    f"{event.get('detail')}")
        case "query.restart":
            return f"the supervisor started the query again on its checkpoint ({event.get('detail')})"
        case "task.attempt":
            return (f"Spark's event log: task {event.get('task')}.{event.get('attempt')} in stage "
                    f"{event.get('stage')} on {event.get('container')} (executor {event.get('executor')}): "
                    f"{event.get('outcome')}")
        case "speculation":
            return (f"Spark's event log says it ran a copy of a slow task ({event.get('copies')} marked "
                    f"speculatable): {event.get('first')}")
        case "write.copied":
            return (f"a task's copy on the wire: {event.get('copy')} wrote {event.get('records')} records that "
                    f"{event.get('attempt')} wrote while stopped")
        case "write.unread":
            return f"the records {event.get('container')} wrote were not compared: {event.get('why')}"
    details = ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("t", "type"))
    return f"{kind}: {details}"


def events_html(events: list[dict]) -> str:
    """A collapsible table per event type, in time order."""
    if not events:
        return "<p>No events.</p>"
    start = events[0]["t"]
    by_type: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        by_type[event["type"]].append(event)
    sections = []
    for kind, group in sorted(by_type.items()):
        rows = "".join(f"<tr><td>+{e['t'] - start:.1f} s</td><td>{escape(describe(e))}</td></tr>"
                       for e in group[:SHOWN_PER_TYPE])
        hidden = len(group) - SHOWN_PER_TYPE
        more = f"<p>... and {hidden} more in history.jsonl</p>" if hidden > 0 else ""
        sections.append(f"<details class='events' data-type='{escape(kind)}'><summary>{escape(kind)} "
                        f"({len(group)})</summary><table>{rows}</table>{more}</details>")
    return "".join(sections)
