"""Where a scenario's time goes, read from its history: from its start until its query runs (topics,
input, reference runs, spark-submit), from there to the first batch, the batches, a fault until the
first batch committed after it, and the wait from the last batch until the output is read.

A driver's start is split by the times its `container.start` event carries (harness.run.driver_supervisor):
asked for until its container runs, the container running until its SparkSession is up (the JVM, the
Python app, the application registered), and the session until its query runs. The first driver's parts
are `driver_*`; after a fault, the next driver's are `restart_*`, with the fault until that driver was
asked for (the kill, the old driver's log kept and its container removed) and from its query until its
first batch committed."""

from __future__ import annotations

import statistics

DRIVER_PARTS = (("container", "submitted", "running"), ("jvm_to_session", "running", "session"),
                ("session_to_query", "session", "t"))


def phases(events: list[dict]) -> dict[str, float | int]:
    """Seconds per phase (absent when the scenario did not reach it), and the batches' count and median."""
    first = {}
    for event in events:
        first.setdefault(event["type"], event["t"])
    planned = {e["batch"]: e["t"] for e in events if e["type"] == "batch.planned"}
    committed = {e["batch"]: e["t"] for e in events if e["type"] == "batch.committed"}
    durations = [committed[b] - planned[b] for b in committed if b in planned]
    found: dict[str, float | int] = {}

    def span(name: str, start: float | None, end: float | None) -> None:
        if start is not None and end is not None and end >= start:
            found[name] = round(end - start, 2)

    span("start_to_query", first.get("scenario.start"), first.get("container.start"))
    span("query_to_first_batch", first.get("container.start"), first.get("batch.planned"))
    if durations:
        found["batches"] = len(durations)
        found["batch_median"] = round(statistics.median(durations), 2)
        first_planned = min(b for b in committed if b in planned)
        span("first_batch", planned[first_planned], committed[first_planned])
        span("first_to_last_batch", min(planned.values()), max(committed.values()))
    drivers = [e for e in events if e["type"] == "container.start" and e.get("role", "driver") == "driver"]
    if drivers:
        for part, start, end in DRIVER_PARTS:
            span(f"driver_{part}", drivers[0].get(start), drivers[0].get(end))
    fault = first.get("fault.inject")
    if fault is not None:
        span("fault_to_recovery", fault, min((t for t in committed.values() if t > fault), default=None))
        after = next((e for e in drivers if e.get("restart", 0) > 0 and e["t"] > fault), None)
        if after is not None:
            span("fault_to_next_driver", fault, after["t"])
            span("restart_kill_to_submit", fault, after.get("submitted"))
            for part, start, end in DRIVER_PARTS:
                span(f"restart_{part}", after.get(start), after.get(end))
            span("restart_query_to_batch", after["t"], min((t for t in committed.values() if t > after["t"]),
                                                           default=None))
    span("last_batch_to_read", max(committed.values(), default=None), first.get("read"))
    return found
