"""Where a scenario's time goes, and the harness's own share of it, from one run on one cluster: the
baseline of a sink, the same query with a sink that discards its input (benchmarks/discard_sink.py:
Spark's `noop` format, so no output), and a fault scenario.

    python benchmarks/overhead.py [--sink transactional] [--fault kill:sender@txn.commit#1] [--repeats 1]

Per scenario: its time in all; the harness's parts before the query (oracle, topics and input) and after
it (the read and the check, the report); the driver's start (spark-submit until the query runs); the
query until its input was consumed; and the phases from its history (the first batch's extra seconds,
the time between batches, the wait from the last batch until the read). The harness's share is its own
parts over the whole; the query's time less the discarding query's is the sink's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from docs_page import record, section

from harness.interrupt import run_script
from harness.run.session import scenario, session

DISCARD = f"{Path(__file__).with_name('discard_sink.py')}:sink"
COLUMNS = ("scenario", "seconds", "before query", "driver start", "query", "after query", "harness share",
           "first batch", "between batches", "last batch to read")


def measure(cluster: object, name: str, sink: str, faults: list[str]) -> dict[str, float]:
    """One scenario's parts, in seconds."""
    started = time.monotonic()
    result = scenario(cluster, name, sink=sink, faults=faults).run()  # type: ignore[arg-type]
    total = time.monotonic() - started
    parts, phases = result.seconds, result.phases or {}
    before = parts.get("oracle", 0.0) + parts.get("produce", 0.0)
    query = parts.get("consume", 0.0)
    driver = parts.get("driver_start", 0.0)
    after = total - before - driver - query  # the read, the check, the report and the topics made
    return {"seconds": total, "before query": before, "driver start": driver, "query": query,
            "after query": after, "harness share": (before + after) / total,
            "first batch": phases.get("query_to_first_batch", 0.0), "between batches": phases.get("batch_median", 0.0),
            "last batch to read": phases.get("last_batch_to_read", 0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sink", default="transactional")
    parser.add_argument("--fault", default="kill:sender@txn.commit#1")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "discard": [], "fault": []}
    with session() as opened:
        for n in range(args.repeats):
            runs["baseline"].append(measure(opened.cluster, f"overhead-baseline-{n}", args.sink, []))
            runs["discard"].append(measure(opened.cluster, f"overhead-discard-{n}", DISCARD, []))
            runs["fault"].append(measure(opened.cluster, f"overhead-fault-{n}", args.sink, [args.fault]))
    table = []
    for name, measured in runs.items():
        median = {column: statistics.median(m[column] for m in measured) for column in COLUMNS[1:]}
        table.append((name, *(f"{median[c]:.0%}" if c == "harness share" else f"{median[c]:.1f}" for c in COLUMNS[1:])))
    print(f"sink {args.sink}; discard: {DISCARD}; fault {args.fault}; median of {args.repeats}; seconds")
    print("  ".join(f"{c:>18}" for c in COLUMNS))
    for row in table:
        print("  ".join(f"{c:>18}" for c in row))
    sink_s = statistics.median(m["query"] for m in runs["baseline"]) - statistics.median(
        m["query"] for m in runs["discard"])
    print(f"the sink's own time in the baseline's query (less the discarding query's): {sink_s:.1f} s")
    load = ", ".join(f"{average:.1f}" for average in os.getloadavg())
    print(f"load average at the end (1, 5, 15 min): {load}")
    command = f"python benchmarks/overhead.py --sink {args.sink} --fault {args.fault} --repeats {args.repeats}"
    record("overhead", "Scenario overhead", "Where a scenario's time goes and the harness's own share of it "
           "(its work before and after the query), from `benchmarks/overhead.py`: the baseline, the same query "
           "with a sink that discards its input, and a fault scenario, on one cluster in one run. The discarding "
           "query's output is empty, so its every record is `lost` and its time after the query includes "
           "explaining them from the broker's log.",
           section(command, COLUMNS, table, f"The sink's own time in the baseline's query: {sink_s:.1f} s. The "
                   f"machine's load average at the end (1, 5, 15 min): {load}."))


if __name__ == "__main__":
    run_script(main)
