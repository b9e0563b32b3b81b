"""Where a scenario's time goes, read from its history: from its start until its query runs (topics,
input, reference runs, spark-submit), from there to the first batch, the batches, a fault until the
first batch committed after it, and the wait from the last batch until the output is read."""

from __future__ import annotations

import statistics


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
        span("first_to_last_batch", min(planned.values()), max(committed.values()))
    fault = first.get("fault.inject")
    if fault is not None:
        span("fault_to_recovery", fault, min((t for t in committed.values() if t > fault), default=None))
    span("last_batch_to_read", max(committed.values(), default=None), first.get("read"))
    return found
