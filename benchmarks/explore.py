"""Runs to the first detection of the known-bad sinks whose bug needs a particular occurrence or two
faults: `explore` (a fresh coverage store each repetition, its pairs shuffled by the repetition's seed)
against a seeded random nemesis (Jepsen's way: kills and pauses of random executors and drivers at random
times), the median of the repetitions; then how many scenarios an hour `explore` runs on the reference sink
and where their time goes: its first combinations, in explore's order, each before and after the throughput
cut (a backlog's last few records no longer take a batch of their own), then `explore --workers 2` with two
clusters on this engine.

    python benchmarks/explore.py [--sinks a,b] [--repeats 3] [--first-seed 1] [--methods explore,random]
                                 [--records 10000] [--max-runs 30] [--every 10] [--reference-runs 6]
                                 [--two-clusters 8]

A run counts the baseline too. Only anomalies count as a detection; a repetition without one within
--max-runs shows as `>N`. Repetition N uses seed N (from --first-seed), so repetitions can run as
separate processes on separate clusters and be put together.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import harness.run.scenario as scenario_module
from harness.certify.matrix import BASELINE, MatrixScenario
from harness.certify.rows import MatrixRun, Row, run_row
from harness.certify.worker import Worker
from harness.checker.verdict import FAIL, PASS
from harness.cli.explore import where_the_time_goes
from harness.cluster.engine import engine_socket_url
from harness.cluster.labels import new_run_id
from harness.cluster.topology import Cluster
from harness.explore.combinations import combinations
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import Exploration, explore, ordered, run_combination
from harness.explore.spread import ExploreJob, explore_spread
from harness.faults.spec import random_nemesis
from harness.interrupt import run_script
from harness.run.session import session

NEEDS_MORE = "bad_markers_every_other_batch,bad_markers_one_restart_back"


def by_explore(cluster: Cluster, sink: str, records: int, seed: int, max_runs: int, folder: Path) -> tuple[
        int | None, str, float]:
    """Runs to the first failure (None: none within max_runs), what caught it, the baseline's stream time."""
    found = explore(cluster, MatrixRun(sink, records=records, seed=seed), 24 * 3600.0,
                    CoverageStore(folder / f"{sink}-{seed}"), stop_at_first=True, max_runs=max_runs)
    failures = found.failures
    if not failures:
        return None, "-", found.baseline_consume_s
    combination, row = failures[0]
    caught = f"{combination.key}: {', '.join(f'{k}={v}' for k, v in row.anomalies.items())}"
    return len(found.rows) + 1, caught, found.baseline_consume_s


def by_random(cluster: Cluster, sink: str, records: int, seed: int, horizon: float, every: float,
              max_runs: int) -> int | None:
    """Random-nemesis runs to the first anomaly, seeds seed*1000+1, +2, ... (None: none within max_runs)."""
    for n in range(1, max_runs + 1):
        steps = tuple(str(step) for step in random_nemesis(seed * 1000 + n, horizon, every))
        row, _ = run_row(cluster, MatrixRun(sink, records=records, seed=seed),
                         MatrixScenario(f"{sink}-random-{seed}-{n}", steps))
        if row.outcome == FAIL and set(row.anomalies) - {"vacuous"}:
            return n
    return None


def baseline_stream(cluster: Cluster, sink: str, records: int, seed: int) -> float:
    """The seconds a fault-free run's stream takes: the span random faults are spread over (random alone)."""
    row, result = run_row(cluster, MatrixRun(sink, records=records, seed=seed),
                          replace(BASELINE, name=f"{sink}-random-baseline-{seed}"))
    if result is None or row.outcome != PASS:
        raise SystemExit(f"{sink}'s baseline did not pass: {row.outcome}")
    return result.seconds.get("consume", row.seconds)


def shown(runs: list[int | None], cap: int) -> str:
    return ", ".join(str(n) if n is not None else f">{cap}" for n in runs)


def median(runs: list[int | None], cap: int) -> str:
    value = statistics.median(n if n is not None else cap + 1 for n in runs)
    return f">{cap}" if value > cap else f"{value:g}"


WAYS = ("before", "after")  # the backlog's last few records in a batch of their own, and not


@contextmanager
def way(name: str) -> Iterator[None]:
    """`before`: scenarios with the batch size before the cut (maxOffsetsPerTrigger without the partitions'
    rounding: a backlog's last few records took a batch of their own); `after`: as the harness runs now."""
    if name == "after":
        yield
        return
    kept = scenario_module.batch_size
    scenario_module.batch_size = lambda records, partitions: max(1_000, -(-records // scenario_module.BATCHES))
    try:
        yield
    finally:
        scenario_module.batch_size = kept


def throughput(cluster: Cluster, records: int, runs: int) -> dict[str, list[Row]]:
    """The reference sink's first `runs` combinations in explore's order, each run before the cut and after
    it, in adjacent pairs whose order alternates, so that a load that drifts weighs on both alike."""
    run = MatrixRun("transactional", records=records)
    baseline, result = run_row(cluster, run, replace(BASELINE, name="throughput-baseline"))
    if result is None or baseline.outcome != PASS:
        raise SystemExit(f"the reference sink's baseline did not pass: {baseline.outcome}")
    candidates = combinations(result.observation, len(result.batches_planned), records)
    rows: dict[str, list[Row]] = {name: [] for name in WAYS}
    for n, combination in enumerate(ordered(candidates, Counter(), run.seed)[:runs]):
        for name in WAYS if n % 2 == 0 else WAYS[::-1]:
            with way(name):
                rows[name].append(run_combination(cluster, run, combination))
            print(f"{name:<6} {combination.key[:40]:<40} {rows[name][-1].outcome:<5} {rows[name][-1].seconds:5.0f} s",
                  flush=True)
    return rows


def two_clusters(records: int, budget_s: float) -> list[Row]:
    """`explore --workers 2` on this engine (after the cut), for `budget_s`: two clusters on the same cores,
    each with its baseline, claiming combinations from one store in explore's order."""
    run_id = new_run_id()
    workers = [Worker(i, engine_socket_url(), f"{run_id}-w{i}") for i in range(2)]
    with tempfile.TemporaryDirectory() as store:
        found = explore_spread(ExploreJob(MatrixRun("transactional", records=records), budget_s, Path(store),
                                          stop_at_first=False), workers)
    rows = []
    for worker, outcome, _ in found:
        if not isinstance(outcome, Exploration):
            raise SystemExit(f"worker {worker.name} stopped: {outcome}")
        rows += [replace(row, worker=worker.name) for _, row in outcome.rows]
    return rows


def per_hour(rows: list[Row]) -> float:
    """Scenarios an hour of one cluster running them back to back (cluster start and baseline left out)."""
    return 3600 * len(rows) / sum(r.seconds for r in rows)


def speed_line(name: str, rows: list[Row]) -> str:
    """One way's scenarios an hour (summed over the workers, clusters running at once) and where its time
    went."""
    figure = sum(per_hour([r for r in rows if r.worker == w]) for w in {r.worker for r in rows})
    failures = sum(r.outcome == FAIL for r in rows)
    return (f"reference sink, {name}: {figure:.0f} scenarios an hour ({len(rows)} scenarios, {failures} failures); "
            f"{where_the_time_goes(rows)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sinks", default=NEEDS_MORE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=1, help="the first repetition's seed")
    parser.add_argument("--methods", default="explore,random", help="explore, random or both")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--max-runs", type=int, default=30, help="runs per repetition before '>N'")
    parser.add_argument("--every", type=float, default=10.0, help="mean seconds between random faults")
    parser.add_argument("--reference-runs", type=int, default=6,
                        help="combinations of the reference sink's explore, each run before and after the cut, "
                             "for its scenarios an hour (0: none)")
    parser.add_argument("--two-clusters", type=float, default=8.0, metavar="MIN",
                        help="minutes of `explore --workers 2` on this engine afterwards (0: none)")
    args = parser.parse_args()
    started = time.monotonic()
    lines = []
    with session() as opened, tempfile.TemporaryDirectory() as stores:
        for sink in filter(None, args.sinks.split(",")):
            explored, randomly, caught = [], [], []
            for seed in range(args.first_seed, args.first_seed + args.repeats):
                runs, how, horizon = None, "-", 0.0
                if "explore" in args.methods:
                    runs, how, horizon = by_explore(opened.cluster, sink, args.records, seed, args.max_runs,
                                                    Path(stores))
                explored.append(runs)
                caught.append(how)
                if "random" in args.methods:
                    horizon = horizon or baseline_stream(opened.cluster, sink, args.records, seed)
                    randomly.append(by_random(opened.cluster, sink, args.records, seed, horizon, args.every,
                                              args.max_runs))
                else:
                    randomly.append(None)
                said = {"explore": f"explore {runs or f'>{args.max_runs}'} runs ({how})",
                        "random": f"random {randomly[-1] or f'>{args.max_runs}'}"}
                print(f"{sink} repetition {seed}: "
                      f"{'; '.join(text for method, text in said.items() if method in args.methods)}", flush=True)
            lines.append(f"{sink:<32} {median(explored, args.max_runs):>8} {shown(explored, args.max_runs):>14} "
                         f"{median(randomly, args.max_runs):>8} {shown(randomly, args.max_runs):>14}  {caught[0]}")
        speeds = throughput(opened.cluster, args.records, args.reference_runs) if args.reference_runs else {}
    if args.two_clusters:  # once the session's cluster is gone: two clusters, not three
        speeds["two clusters (explore --workers 2), after"] = two_clusters(args.records, args.two_clusters * 60)
    print(f"\n{args.records} records a run; random: one fault every {args.every:g} s on average; "
          f"{(time.monotonic() - started) / 60:.0f} min")
    print(f"{'sink':<32} {'explore':>8} {'(each)':>14} {'random':>8} {'(each)':>14}  explore caught it with")
    for line in lines:
        print(line)
    for name, rows in speeds.items():
        print(speed_line(name, rows))


if __name__ == "__main__":
    run_script(main)
