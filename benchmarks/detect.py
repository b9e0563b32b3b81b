"""Runs until the first detection of each known-bad sink: faults at protocol points (the sink's quick
certification, stopped at its first failing scenario) against a seeded random nemesis (kills and pauses
of random executors and drivers at random times, the common approach), on the same workload.

    python benchmarks/detect.py [--random-runs 3] [--records 10000] [--every 10] [--sinks bad_a,bad_b]

A random run's schedule is drawn from its seed (1, 2, ...) over the sink's baseline run time; the seeds
and schedules are written to detect.json in the run's report folder. Only anomalies count as a
detection: a run that fails as vacuous or cannot decide is a run without one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import asdict, dataclass, field

from harness.certify.matrix import BASELINE, MatrixScenario, rows_for
from harness.certify.rows import MatrixRun, Row, run_row
from harness.cluster.topology import Cluster
from harness.faults.spec import random_nemesis
from harness.interrupt import run_script
from harness.run.session import session
from harness.subject.code_spec import catalog


@dataclass
class Search:
    """Runs of one approach on one sink, until the first detection."""

    runs: int = 0
    scenarios: int = 0
    seconds: float = 0.0
    detected: str | None = None  # the scenario and anomalies that caught the sink
    schedules: list[list[str]] = field(default_factory=list)

    def count(self, row: Row) -> bool:
        """Add a scenario's outcome; whether it caught the sink."""
        self.scenarios += 1
        self.seconds += row.seconds
        caught = {name: n for name, n in row.anomalies.items() if name != "vacuous"}
        if row.outcome == "fail" and caught:
            self.detected = f"{row.scenario.name}: {', '.join(f'{k}={v}' for k, v in caught.items())}"
        return self.detected is not None


def targeted(cluster: Cluster, sink: str, records: int, search: Search) -> float:
    """The quick certification until its first failing scenario; returns the baseline's consume time."""
    search.runs = 1
    rows = [BASELINE]
    horizon = 0.0
    while rows:
        row = rows.pop(0)
        named = dataclasses.replace(row, name=f"{sink}-{row.name}")
        outcome, result = run_row(cluster, MatrixRun(sink, records=records, rate=0.0), named)
        if search.count(outcome):
            break
        if row.name == "baseline":
            if result is None:
                raise SystemExit(f"{sink}: its baseline could not run ({outcome.error})")
            horizon = result.seconds["consume"]
            rows = rows_for(result.observation, quick=True)
    return horizon


def randomly(cluster: Cluster, sink: str, records: int, horizon: float, runs: int, every: float,
             search: Search) -> None:
    """Up to `runs` scenarios under a random nemesis, seeds 1, 2, ..."""
    for seed in range(1, runs + 1):
        steps = [str(step) for step in random_nemesis(seed, horizon, every)]
        search.runs += 1
        search.schedules.append(steps)
        row = MatrixScenario(f"{sink}-random-{seed}", tuple(steps))
        outcome, _ = run_row(cluster, MatrixRun(sink, records=records), row)
        if search.count(outcome):
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--random-runs", type=int, default=3, help="random runs per sink before 'not in N'")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--every", type=float, default=10.0, help="mean seconds between random faults")
    parser.add_argument("--sinks", default="", help="comma-separated; default: every bad_* sink of the catalog")
    args = parser.parse_args()
    sinks = args.sinks.split(",") if args.sinks else [name for name in catalog("sink") if name.startswith("bad_")]
    table: dict[str, dict[str, Search]] = {}
    started = time.monotonic()
    with session() as opened:
        for sink in sinks:
            aimed, chance = Search(), Search()
            horizon = targeted(opened.cluster, sink, args.records, aimed)
            randomly(opened.cluster, sink, args.records, horizon, args.random_runs, args.every, chance)
            table[sink] = {"targeted": aimed, "random": chance}
            print(f"{sink}: targeted {aimed.detected or 'not detected'}; random {chance.detected or 'not detected'}",
                  flush=True)
        out = opened.folder / "detect.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({sink: {k: asdict(v) for k, v in row.items()} for sink, row in table.items()},
                              indent=2))
    print(f"\n{len(sinks)} known-bad sinks, {args.records} records, random: one fault every {args.every:g} s "
          f"on average, up to {args.random_runs} runs; {(time.monotonic() - started) / 60:.0f} min; {out}")
    print(f"{'sink':<34} {'targeted runs':>13} {'(scenarios)':>11} {'random runs':>12} {'(scenarios)':>11} "
          f"{'ratio':>6}  caught by")
    for sink, row in table.items():
        aimed, chance = row["targeted"], row["random"]
        hit = str(aimed.runs) if aimed.detected else f"not in {aimed.runs}"
        rand = str(chance.runs) if chance.detected else f"not in {chance.runs}"
        ratio = f"{chance.runs / aimed.runs:.0f}x" if aimed.detected and chance.detected else (
            f">{chance.runs}x" if aimed.detected else "-")
        print(f"{sink:<34} {hit:>13} {f'({aimed.scenarios})':>11} {rand:>12} {f'({chance.scenarios})':>11} "
              f"{ratio:>6}  {aimed.detected or '-'}")


if __name__ == "__main__":
    run_script(main)
