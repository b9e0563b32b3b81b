"""A swimlane timeline of one scenario (SVG, no JavaScript): a lane for the batches, one per driver and
executor container and one per broker, each transaction a bar from its first write to its commit or
abort (colored by outcome), each PostgreSQL commit a bar from its sending to its answer (or to the end,
never answered), plain produce requests as ticks, a query's own failures as crosses, fault
windows shaded and labelled across the lane they hit (a broker fault on the broker it resolved to),
leader and coordinator changes marked on the broker that took over, a table output's versions and the
anomalies marked in an output lane at the time their record was written (found by its partition and offset)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

WIDTH, LANE, LEFT, RIGHT, TOP = 1000, 34, 190, 20, 24
COLORS = {"committed": "#27ae60", "aborted": "#c0392b", "open": "#e67e22"}
TAKEOVER = {"leader": "#8e44ad", "coordinator": "#d35400"}  # a partition's new leader, a new coordinator


def brokers(events: list[dict]) -> list[str]:
    """The brokers' lane names (their containers), from the number the scenario ran with."""
    count = next((e.get("brokers", 1) for e in events if e["type"] == "scenario.start"), 1)
    return ["kafka"] if count == 1 else [f"kafka-{n}" for n in range(1, count + 1)]


def swimlanes_svg(events: list[dict], anomalies: Mapping[str, dict],
                  written_ms: Mapping[tuple[int, int], int]) -> str:
    """The scenario's lanes; `written_ms` maps (partition, offset) of output records to their timestamp."""
    times = [e["t"] for e in events if "t" in e]
    if not times:
        return "<p>No events to draw.</p>"
    start, end = min(times), max(times)
    span = max(end - start, 1.0)
    lanes = _lanes(events)
    height = TOP + LANE * len(lanes) + 30

    def x(t: float) -> float:
        return LEFT + (min(max(t, start), end) - start) / span * (WIDTH - LEFT - RIGHT)

    def y(lane: str) -> float:
        return TOP + LANE * lanes.index(lane)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" class="swimlanes" '
             f'font-family="sans-serif" font-size="11">']
    for n, lane in enumerate(lanes):
        shade = "#f4f6f7" if n % 2 else "#fff"
        parts.append(f'<rect x="0" y="{y(lane)}" width="{WIDTH}" height="{LANE}" fill="{shade}"/>'
                     f'<text x="6" y="{y(lane) + LANE / 2 + 4}" class="lane">{escape(lane)}</text>')
    parts += _faults(events, lanes, x, y, height)
    parts += _batches(events, x, y("batches"))
    parts += _transactions(events, x, y)
    parts += _pg_commits(events, lanes, x, y)
    parts += _containers(events, lanes, x, y)
    parts += _query_failures(events, lanes, x, y)
    parts += _task_attempts(events, lanes, x, y)
    parts += _takeovers(events, lanes, x, y)
    parts += _table_versions(events, x, y("output"))
    parts += _anomalies(anomalies, written_ms, x, y("output"))
    parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{height - 26}" y2="{height - 26}" stroke="#333"/>'
                 f'<text x="{LEFT}" y="{height - 10}">0 s</text>'
                 f'<text x="{WIDTH - RIGHT - 40}" y="{height - 10}">{span:.0f} s</text></svg>')
    return "".join(parts)


def _lanes(events: list[dict]) -> list[str]:
    """batches, then drivers and executors in order of appearance, the brokers, the output."""
    nodes = brokers(events)
    seen: dict[str, None] = {}
    for event in events:
        name = event.get("container") or (event.get("trigger") or {}).get("container")
        if name and name not in nodes:
            seen[name] = None
    return ["batches", *seen, *nodes, "output"]


def _table_versions(events: list[dict], x, top: float) -> list[str]:  # type: ignore[no-untyped-def]
    """A table output's versions on the output lane, as they appeared: those holding a batch Spark had not
    committed yet (the table.committed point) dark, the others light; a version that holds a batch an
    earlier one holds red (committed again), orange where it changed no row (an idempotent repeat of a
    state table: harness.checker.repeats)."""
    idempotent = {v for e in events if e["type"] == "table.repeat" for v in e.get("versions", [])[1:]}
    first: dict[int, int] = {}  # batch -> the first version that holds it
    parts = []
    for event in events:
        if event["type"] == "table.committed":
            version, batch = event.get("version"), event.get("batch")
            again = batch is not None and first.setdefault(batch, version) != version
            color = ("#e67e22" if version in idempotent else "#c0392b") if again else \
                "#16a085" if event.get("point") else "#a3e4d7"
            operation = f" ({escape(str(event['operation']))})" if event.get("operation") else ""
            repeat = (f"; batch {escape(str(batch))} again, first in version {escape(str(first[batch]))}"
                      f"{': an idempotent repeat' if version in idempotent else ''}") if again else ""
            parts.append(f'<rect x="{x(event["t"]) - 1:.1f}" y="{top + 2}" width="3" height="{LANE - 4}" '
                         f'fill="{color}"><title>table version {escape(str(version))}{operation}: batch '
                         f'{escape(str(batch))} '
                         f'({escape(str(event.get("by")))}){", driver held" if event.get("held") else ""}{repeat}'
                         f'</title></rect>')
    return parts


def _batches(events: list[dict], x, top: float) -> list[str]:  # type: ignore[no-untyped-def]
    marks = {"batch.planned": ("#7f8c8d", 4, "planned"), "state.committed": ("#2980b9", 14, "state committed"),
             "batch.committed": ("#27ae60", 24, "committed")}
    parts = []
    for event in events:
        if event["type"] in marks:
            color, dy, what = marks[event["type"]]
            parts.append(f'<rect x="{x(event["t"]) - 1:.1f}" y="{top + dy}" width="3" height="8" fill="{color}">'
                         f'<title>batch {event.get("batch")} {what}</title></rect>')
    return parts


def _transactions(events: list[dict], x, y) -> list[str]:  # type: ignore[no-untyped-def]
    """A bar per transaction (container, connection, transactional id): first write to its commit or
    abort, or to the next producer with its id (fenced, so aborted), or open to the end."""
    open_at: dict[tuple, dict] = {}
    bars: list[tuple[dict, float, str]] = []
    ticks: dict[tuple[str, int], int] = {}
    for event in events:
        if event["type"] != "point" or not event.get("container"):
            continue
        point = event["point"]
        if point == "produce":
            key = (event["container"], int(event["t"]))
            ticks[key] = ticks.get(key, 0) + 1
            continue
        txn = (event["container"], event.get("connection"), event.get("transactional_id"))
        if point == "txn.init":  # a new producer with this id fences (and aborts) what an old one left open
            for fenced in [t for t in open_at if t[2] == txn[2]]:
                bars.append((open_at.pop(fenced), event["t"], "aborted"))
        elif point == "txn.first_write" and txn not in open_at:
            open_at[txn] = event
        elif point in ("txn.commit", "txn.abort") and txn in open_at:
            outcome = "committed" if point == "txn.commit" and event.get("committed") else "aborted"
            bars.append((open_at.pop(txn), event["t"], outcome))
    last = max(e["t"] for e in events)
    bars += [(first, last, "open") for first in open_at.values()]
    parts = []
    for first, ended, outcome in bars:
        top = y(first["container"]) + 8
        title = f"{first.get('transactional_id')}: {outcome} after {ended - first['t']:.1f} s"
        parts.append(f'<rect x="{x(first["t"]):.1f}" y="{top}" width="{max(x(ended) - x(first["t"]), 2):.1f}" '
                     f'height="{LANE - 16}" fill="{COLORS[outcome]}" opacity="0.75">'
                     f'<title>{escape(title)}</title></rect>')
    for (container, second), count in ticks.items():
        parts.append(f'<rect x="{x(second):.1f}" y="{y(container) + 10}" width="2" height="{LANE - 20}" '
                     f'fill="#566573"><title>{count} produce requests at {escape(container)}</title></rect>')
    return parts


def _pg_commits(events: list[dict], lanes: list[str], x, y) -> list[str]:  # type: ignore[no-untyped-def]
    """A bar per PostgreSQL commit on its sender, from the gate's `pg.commit` as sent to its answer
    (answers come back in the order commits were sent on a connection): committed, not committed, its
    answer dropped, or never answered (cut before the server)."""
    sent: dict[tuple[object, object], list[dict]] = {}
    answered: dict[tuple[object, object], int] = {}  # the last answer on a connection: the one a drop settles
    bars: list[list] = []  # [sent event, answered at, outcome]
    for event in events:
        key = (event.get("container"), event.get("connection"))
        if event["type"] == "drop" and event.get("phase") == "response" and key in answered:
            bars[answered.pop(key)][2] += ", its answer dropped"
        if event["type"] != "point" or event.get("point") != "pg.commit" or event.get("container") not in lanes:
            continue
        if event.get("phase") == "request":
            sent.setdefault(key, []).append(event)
        elif sent.get(key):
            answered[key] = len(bars)
            bars.append([sent[key].pop(0), event["t"], "committed" if event.get("committed") else "not committed"])
    last = max(e["t"] for e in events)
    bars += [[first, last, "never answered"] for waiting in sent.values() for first in waiting]
    parts = []
    for first, ended, outcome in bars:
        color = COLORS["committed" if outcome.startswith("committed") else "aborted"]
        title = f"PostgreSQL {first.get('how')} ({first.get('statement')}): {outcome} after {ended - first['t']:.2f} s"
        parts.append(f'<rect x="{x(first["t"]):.1f}" y="{y(first["container"]) + 8}" '
                     f'width="{max(x(ended) - x(first["t"]), 2):.1f}" height="{LANE - 16}" fill="{color}" '
                     f'opacity="0.75"><title>{escape(title)}</title></rect>')
    return parts


def _containers(events: list[dict], lanes: list[str], x, y) -> list[str]:  # type: ignore[no-untyped-def]
    parts = []
    for event in events:
        if event["type"] in ("container.start", "container.remove") and event.get("container") in lanes:
            what = "started" if event["type"] == "container.start" else "removed"
            parts.append(f'<path d="M{x(event["t"]):.1f},{y(event["container"]) + 2} l5,0 l-5,8 z" fill="#34495e">'
                         f'<title>{escape(event["container"])} {what}</title></path>')
    return parts


def _task_attempts(events: list[dict], lanes: list[str], x, y) -> list[str]:  # type: ignore[no-untyped-def]
    """An outlined bar per attempt of a task that ran more than once, on the container it ran in."""
    parts = []
    last = max(e["t"] for e in events)
    for event in events:
        if event["type"] == "task.attempt" and event.get("container") in lanes:
            left, right = x(event["t"]), x(event.get("ended") or last)
            color = "#27ae60" if event.get("outcome") == "finished" else "#7f8c8d"
            title = (f"task {event.get('task')}.{event.get('attempt')} in stage {event.get('stage')}: "
                     f"{event.get('outcome')} (Spark's event log, the driver's word)")
            top, width = y(event["container"]) + LANE - 7, max(right - left, 3)
            parts.append(f'<rect x="{left:.1f}" y="{top}" width="{width:.1f}" height="5" fill="none" '
                         f'stroke="{color}" stroke-width="1.5"><title>{escape(title)}</title></rect>')
    return parts


def _query_failures(events: list[dict], lanes: list[str], x, y) -> list[str]:  # type: ignore[no-untyped-def]
    """A cross on the driver whose query failed on its own (its restart is the next driver's start)."""
    parts = []
    for event in events:
        if event["type"] == "query.failed" and event.get("container") in lanes:
            left, top = x(event["t"]), y(event["container"]) + LANE / 2
            parts.append(f'<path d="M{left - 5:.1f},{top - 5} l10,10 m0,-10 l-10,10" stroke="#c0392b" '
                         f'stroke-width="2.5"><title>the driver\'s log says: {escape(str(event.get("detail")))}'
                         '</title></path>')
    return parts


def _faults(events: list[dict], lanes: list[str], x, y, height: float) -> list[str]:  # type: ignore[no-untyped-def]
    """Each fault from injection to its heal (or, with none, its last effect), shaded across the lane it hit."""
    parts = []
    resolved = {e.get("fault"): e.get("container") for e in events if e["type"] == "fault.target"}
    effects = {e.get("fault"): e["t"] for e in events if e["type"] == "effect"}
    ends = {**effects, **{e.get("fault"): e["t"] for e in events if e["type"] in ("fault.heal", "recovery")}}
    last = max(e["t"] for e in events)
    for event in events:
        if event["type"] != "fault.inject":
            continue
        spec = str(event.get("fault", ""))
        target = resolved.get(spec) or (event.get("trigger") or {}).get("container")
        ended = max(ends.get(spec, last), event["t"] + 0.5)
        top, tall = (y(target), LANE) if target in lanes else (TOP, height - TOP - 26)
        parts.append(f'<rect x="{x(event["t"]):.1f}" y="{top}" width="{max(x(ended) - x(event["t"]), 3):.1f}" '
                     f'height="{tall}" fill="#f5b7b1" opacity="0.7"><title>{escape(spec)}</title></rect>'
                     f'<text x="{x(event["t"]) + 3:.1f}" y="{top + 10}" fill="#922b21">{escape(spec)}</text>')
    return parts


def _takeovers(events: list[dict], lanes: list[str], x, y) -> list[str]:  # type: ignore[no-untyped-def]
    """A diamond on the broker that became a partition's leader (or a transactional id's coordinator)."""
    parts = []
    for event in events:
        if event["type"] == "kafka.leader" and event.get("was") and event.get("leader") in lanes:
            color = TAKEOVER[event.get("role", "leader")]
            title = f"{event['leader']} now {event.get('role', 'leader')} of {event['partition']} (was {event['was']})"
            parts.append(f'<path d="M{x(event["t"]):.1f},{y(event["leader"]) + LANE - 12} l4,4 l-4,4 l-4,-4 z" '
                         f'fill="{color}"><title>{escape(title)}</title></path>')
    return parts


def _anomalies(anomalies: Mapping[str, dict], written_ms: Mapping[tuple[int, int], int], x,  # type: ignore[no-untyped-def]
               top: float) -> list[str]:
    parts = []
    for name, anomaly in anomalies.items():
        for example in anomaly.get("examples", []):
            at = written_ms.get((example.get("partition"), example.get("offset")))  # type: ignore[arg-type]
            if at is None:
                continue
            label = f"{name} at partition {example['partition']} offset {example['offset']}"
            parts.append(f'<circle cx="{x(at / 1000):.1f}" cy="{top + LANE / 2}" r="5" fill="#c0392b">'
                         f'<title>{escape(label)}</title></circle>')
    return parts
