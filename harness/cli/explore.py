"""`explore`: search a sink's fault space beyond the certificate within a time budget; every combination
tried goes to the coverage store in the reports folder, so each explore of the same code widens the last.
With --workers N, N clusters (on the engines of --docker-hosts) explore into the same store."""

from __future__ import annotations

import argparse
import re
import statistics
import time
from functools import partial

from harness.certify.rows import MatrixRun, Row, checked_subject, matrix_session
from harness.certify.scheduler import spread_note, worker_engines
from harness.certify.worker import Worker
from harness.checker.judge import EXIT_STATUS
from harness.checker.verdict import FAIL, PASS
from harness.cli.options import add_engine, add_search_settings, add_setting, engine_subject
from harness.cluster.engine import engine_socket_url
from harness.cluster.labels import new_run_id
from harness.errors import EXIT_INFRASTRUCTURE, EXIT_OK, BadInput, HarnessError, InfrastructureError
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import BaselineFailed, Exploration, explore, subject_of
from harness.explore.spread import ExploreJob, explore_spread
from harness.progress import say
from harness.report.folders import reports_root
from harness.settings import FLINK
from harness.subject.dependencies import from_settings
from harness.subject.shipment import shipments

UNITS = {"s": 1, "m": 60, "h": 3600}


def budget(text: str) -> float:
    """`30m`, `90s`, `1h` or `1.5h` in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh])\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a budget: a positive number with s, m or h (30m)")
    return float(match.group(1)) * UNITS[match.group(2)]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("explore", help="search a sink's fault space within a time budget")
    add_setting(parser, "sink", no_default=True)
    add_setting(parser, "pipeline")
    add_setting(parser, "output")
    add_setting(parser, "store")
    parser.add_argument("--budget", type=budget, default=budget("30m"), metavar="T",
                        help="time to spend, e.g. 30m, 90s, 1h (default 30m)")
    parser.add_argument("--stop-at-first", action="store_true", help="stop at the first failing scenario")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="N worker processes, each with its own cluster, exploring into one coverage store")
    add_setting(parser, "docker_hosts", metavar="URL,URL")
    add_search_settings(parser)
    add_engine(parser)
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    run = MatrixRun(engine_subject(args, "explore"), args.pipeline, args.seed, args.records, args.stall_timeout,
                    args.live_rate, restarts=args.restarts, output=args.output, store=args.store,
                    dependencies=from_settings(partial(getattr, args)), engine=args.engine)
    checked_subject(run)
    if run.engine == FLINK and (args.workers != 1 or args.docker_hosts):
        raise BadInput("--engine flink explores on one Flink cluster: give no --workers or --docker-hosts")
    store = CoverageStore(reports_root())
    started = time.time()
    stopped: list[str] = []  # workers that stopped on the harness's or the engine's failure
    if args.workers == 1 and not args.docker_hosts:
        with matrix_session(run) as opened:
            try:
                explored = [(explore(opened.cluster, run, args.budget, store, args.stop_at_first), opened.folder)]
            except BaselineFailed as failed:
                print(f"the baseline did not pass, nothing explored: {failed}")
                return EXIT_STATUS[failed.row.outcome]
    else:
        engines = worker_engines(args.workers, args.docker_hosts, engine_socket_url())
        for line in spread_note(engines):
            say(line)
        run_id = new_run_id()
        workers = [Worker(i, engine, f"{run_id}-w{i}") for i, engine in enumerate(engines)]
        explored = []
        for worker, outcome, folder in explore_spread(ExploreJob(run, args.budget, store.path.parent,
                                                                 args.stop_at_first, shipments()), workers):
            if isinstance(outcome, BaselineFailed):
                print(f"{worker.name}: the baseline did not pass, nothing explored: {outcome}")
                return EXIT_STATUS[outcome.row.outcome]
            if isinstance(outcome, HarnessError | RuntimeError):
                print(f"{worker.name} on {worker.engine} stopped: {outcome}")
                stopped.append(worker.name)
                continue
            explored.append((outcome, folder))
    if stopped and not explored:
        raise InfrastructureError(f"every worker stopped ({', '.join(stopped)}): nothing explored")
    status = report(run, store, explored, args.budget, started)
    return EXIT_INFRASTRUCTURE if stopped and status == EXIT_OK else status  # a pass only of what all tried


PHASES = (("start_to_query", "input and driver start"), ("query_to_first_batch", "query to first batch"),
          ("first_to_last_batch", "first to last batch"), ("fault_to_recovery", "fault to recovery"),
          ("last_batch_to_read", "last batch to read"))


def where_the_time_goes(rows: list[Row]) -> str:
    """The median scenario and its phases' medians (harness.run.phases): what a faster explore must cut."""
    if not rows:
        return "no scenario ran after the baseline"
    parts = [f"median scenario {statistics.median(r.seconds for r in rows):.0f} s"]
    for key, name in PHASES:
        values = [r.phases[key] for r in rows if r.phases and r.phases.get(key) is not None]
        if values:
            parts.append(f"{name} {statistics.median(values):.1f} s")
    return "where the time goes: " + ", ".join(parts)


def report(run: MatrixRun, store: CoverageStore, explored: list[tuple[Exploration, object]], budget_s: float,
           started: float) -> int:
    """Each worker's figures, the store's coverage of this code, the failures with how to shrink them
    (and those earlier explores of the same code found)."""
    subject = subject_of(run)
    covered = store.covered(subject)
    for found, _ in explored:
        print(f"\n{found.subject}: {len(found.rows)} scenarios in {found.seconds / 60:.1f} min "
              f"({found.per_hour():.0f} an hour); {found.progress()}")
    print(where_the_time_goes([row for found, _ in explored for _, row in found.rows]))
    classes = explored[0][0].classes if explored else 0
    print(f"coverage store {store.path}: every explore of this code so far: {covered.runs} runs, "
          f"{len(covered.classes)} of {classes} classes, {covered.combinations} combinations, "
          f"{covered.failures} failures")
    for combination, anomalies, folder in store.failures(subject, before=started):
        print(f"an earlier explore of this code failed: {combination}: {anomalies} (report: {folder})")
    failures = [(c, row, folder) for found, folder in explored for c, row in found.failures]
    for combination, row, folder in failures:
        anomalies = ", ".join(f"{k}={v}" for k, v in row.anomalies.items())
        print(f"FAIL {combination.key}: {anomalies}; shrink it: eo-harness shrink {folder}/{row.scenario.name}")
    if failures:
        return EXIT_STATUS[FAIL]
    if not any(found.rows for found, _ in explored):
        raise BadInput(f"a budget of {budget_s:g} s ran no combination after the baseline: give it more time")
    return EXIT_STATUS[PASS]
