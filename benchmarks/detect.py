"""Runs until the first detection of each known-bad sink and pipeline: faults at protocol points (the
quick certification, stopped at its first failing scenario) against a seeded random nemesis (kills and
pauses of random executors and drivers at random times, the common approach), on the same workload.

    python benchmarks/detect.py [--random-runs 3] [--records 10000] [--every 10] [--sinks bad_a,bad_b]
                                [--pipelines bad_c]

A known-bad sink runs with the default pipeline (a table sink with the output and pipeline TABLE_SINKS
gives it), a known-bad pipeline with the reference sink. A
pipeline refused as nondeterministic (its fault-free runs disagree: bad input, exit 2) is detected
with the sink not blamed; that is what a pipeline depending on batch boundaries must get.

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

from docs_page import record, section

from harness import versions
from harness.certify.matrix import BASELINE, MatrixScenario, rows_for
from harness.certify.rows import MatrixRun, Row, run_row
from harness.cluster.topology import Cluster
from harness.faults.spec import random_nemesis
from harness.interrupt import run_script
from harness.output.registry import store
from harness.run.reference import Nondeterministic
from harness.run.session import session
from harness.settings import SETTINGS
from harness.subject.code_spec import catalog, resolve_sink

# Known-bad sinks that write a table: the output each writes and the pipeline it is caught with (a state
# table keeps one row per key, so its sink needs a pipeline with one final result a key: running_totals).
TABLE_SINKS: dict[str, tuple[str, str]] = {
    "bad_delta_blind_append": ("delta", "passthrough"),
    "bad_delta_app_id_per_restart": ("delta", "passthrough"),
    "bad_delta_merge_adds_twice": ("delta", "running_totals"),
    "bad_postgres_batch_row_second_txn": ("postgres", "passthrough"),
    "bad_postgres_jdbc_executors": ("postgres", "passthrough"),
    "bad_postgres_upsert_adds_twice": ("postgres", "running_totals"),
    "bad_iceberg_blind_append": ("iceberg", "passthrough"),
    "bad_iceberg_merge_adds_twice": ("iceberg", "running_totals"),
    "bad_paimon_blind_append": ("paimon", "passthrough"),
    "bad_hudi_blind_append": ("hudi", "passthrough"),
    "bad_delta_blind_append_compacted": ("delta", "passthrough"),
    "bad_iceberg_merge_on_read_adds_twice": ("iceberg", "running_totals"),
    "bad_paimon_primary_key_load_time": ("paimon", "passthrough"),
    "bad_hudi_merge_on_read_load_time_key": ("hudi", "passthrough"),
}


@dataclass(frozen=True)
class Subject:
    """A known-bad sink (run with the default pipeline) or pipeline (run with the reference sink)."""

    kind: str  # "sink" or "pipeline"
    name: str

    def run(self, records: int, **rate: float) -> MatrixRun:
        if self.kind == "sink":
            output, pipeline = TABLE_SINKS.get(self.name, ("kafka", SETTINGS["pipeline"].default))
            declared = resolve_sink(self.name).output
            if declared not in (None, output):
                raise SystemExit(f"{self.name} writes the {declared} output: give it its output and pipeline in "
                                 "TABLE_SINKS")
            return MatrixRun(self.name, pipeline=pipeline, records=records, output=output, **rate)
        return MatrixRun(SETTINGS["sink"].default, pipeline=self.name, records=records, **rate)


@dataclass
class Search:
    """Runs of one approach on one sink, until the first detection."""

    runs: int = 0
    scenarios: int = 0
    seconds: float = 0.0
    detected: str | None = None  # the scenario and anomalies that caught the sink
    refused: bool = False  # the pipeline was refused as nondeterministic, before any fault
    report: str | None = None  # the report folder (in the run's) of the scenario that caught it
    schedules: list[list[str]] = field(default_factory=list)

    def count(self, row: Row) -> bool:
        """Add a scenario's outcome; whether it caught the sink."""
        self.scenarios += 1
        self.seconds += row.seconds
        caught = {name: n for name, n in row.anomalies.items() if name != "vacuous"}
        if row.outcome == "fail" and caught:
            self.detected = f"{row.scenario.name}: {', '.join(f'{k}={v}' for k, v in caught.items())}"
            self.report = row.report
        return self.detected is not None

    def attempt(self, cluster: Cluster, run: MatrixRun, row: MatrixScenario) -> tuple[Row | None, object]:
        """Run a row; a refusal of the pipeline as nondeterministic is its detection (no Row)."""
        try:
            return run_row(cluster, run, row)
        except Nondeterministic as error:
            self.scenarios, self.refused = self.scenarios + 1, True
            self.detected = f"{row.name}: refused, exit 2 ({str(error)[:120]}...)"
            return None, None


def targeted(cluster: Cluster, subject: Subject, records: int, search: Search) -> float:
    """The quick certification until its first failing scenario; returns the baseline's consume time."""
    search.runs = 1
    rows = [BASELINE]
    horizon = 0.0
    while rows:
        row = rows.pop(0)
        named = dataclasses.replace(row, name=f"{subject.name}-{row.name}")
        outcome, result = search.attempt(cluster, subject.run(records, rate=0.0), named)
        if outcome is None or search.count(outcome):
            break
        if row.name == "baseline":
            if result is None:
                raise SystemExit(f"{subject.name}: its baseline could not run ({outcome.error})")
            horizon = result.seconds["consume"]
            rows = rows_for(result.observation, quick=True)
    return horizon


def randomly(cluster: Cluster, subject: Subject, records: int, horizon: float, runs: int, every: float,
             search: Search) -> None:
    """Up to `runs` scenarios under a random nemesis, seeds 1, 2, ..."""
    for seed in range(1, runs + 1):
        steps = [str(step) for step in random_nemesis(seed, horizon, every)]
        search.runs += 1
        search.schedules.append(steps)
        row = MatrixScenario(f"{subject.name}-random-{seed}", tuple(steps))
        outcome, _ = search.attempt(cluster, subject.run(records), row)
        if outcome is None or search.count(outcome):
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--random-runs", type=int, default=3, help="random runs per sink before 'not in N'")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--every", type=float, default=10.0, help="mean seconds between random faults")
    parser.add_argument("--sinks", default="", help="comma-separated; default: every bad_* sink of the catalog")
    parser.add_argument("--pipelines", default="", help="comma-separated; default: every bad_* pipeline")
    args = parser.parse_args()
    subjects = known_bad(args.sinks, args.pipelines)
    table: dict[str, dict[str, Search]] = {}
    started = time.monotonic()
    with session() as opened:
        for subject in subjects:
            aimed, chance = Search(), Search()
            horizon = targeted(opened.cluster, subject, args.records, aimed)
            if aimed.refused:  # before any fault: every random run would be refused the same way
                chance = aimed
            else:
                randomly(opened.cluster, subject, args.records, horizon, args.random_runs, args.every, chance)
            table[subject.name] = {"targeted": aimed, "random": chance}
            print(f"{subject.name}: targeted {aimed.detected or 'not detected'}; "
                  f"random {chance.detected or 'not detected'}", flush=True)
        out = opened.folder / "detect.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({sink: {k: asdict(v) for k, v in row.items()} for sink, row in table.items()},
                              indent=2))
    print(f"\n{len(subjects)} known-bad sinks and pipelines, {args.records} records, random: one fault every "
          f"{args.every:g} s on average, up to {args.random_runs} runs; "
          f"{(time.monotonic() - started) / 60:.0f} min; {out}")
    print(f"{'sink or pipeline':<34} {'targeted runs':>13} {'(scenarios)':>11} {'random runs':>12} "
          f"{'(scenarios)':>11} "
          f"{'ratio':>6}  caught by")
    rows = []
    for sink, row in table.items():
        aimed, chance = row["targeted"], row["random"]
        hit = str(aimed.runs) if aimed.detected else f"not in {aimed.runs}"
        rand = str(chance.runs) if chance.detected else f"not in {chance.runs}"
        ratio = f"{chance.runs / aimed.runs:.0f}x" if aimed.detected and chance.detected else (
            f">{chance.runs}x" if aimed.detected else "-")
        if aimed.refused or not args.random_runs:  # refused before any fault, or no random runs asked for
            rand, ratio = ("refused too" if aimed.refused else "-"), "-"
        print(f"{sink:<34} {hit:>13} {f'({aimed.scenarios})':>11} {rand:>12} {f'({chance.scenarios})':>11} "
              f"{ratio:>6}  {aimed.detected or '-'}")
        rows.append((f"`{sink}`", hit, aimed.scenarios, rand, ratio, aimed.detected or "-"))
    command = (f"python benchmarks/detect.py --random-runs {args.random_runs} --records {args.records} "
               f"--every {args.every:g}" + (f" --sinks {args.sinks}" if args.sinks else "")
               + (f" --pipelines {args.pipelines}" if args.pipelines else ""))
    record("detect", "Known-bad sinks: what catches them", "Runs until the first detection of each known-bad sink "
           "and pipeline: the quick certification (targeted, stopped at its first failing scenario) against a "
           "seeded random nemesis, from `benchmarks/detect.py`.", section(command, (
               "sink or pipeline", "targeted runs", "(scenarios)", "random runs", "ratio", "caught by"), rows))


def known_bad(sinks: str, pipelines: str) -> list[Subject]:
    """The named ones; with neither named, every bad_* sink and pipeline of the catalog whose output runs on
    this run's Spark line (the others said, to be run with --spark of theirs)."""
    if sinks or pipelines:
        return ([Subject("sink", name) for name in filter(None, sinks.split(","))]
                + [Subject("pipeline", name) for name in filter(None, pipelines.split(","))])
    found = [Subject(kind, name) for kind in ("sink", "pipeline") for name in catalog(kind) if name.startswith("bad_")]
    runnable = [s for s in found if not store(TABLE_SINKS.get(s.name, ("kafka",))[0]).unsupported(versions.stack())]
    for left in (s for s in found if s not in runnable):
        print(f"{left.name}: its output does not run on Spark {versions.stack().spark}: run it with its own --spark")
    return runnable


if __name__ == "__main__":
    run_script(main)
