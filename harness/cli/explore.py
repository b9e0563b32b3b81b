"""`explore`: search a sink's fault space beyond the certificate within a time budget; every combination
tried goes to the coverage store in the reports folder, so each explore of the same code widens the last."""

from __future__ import annotations

import argparse
import re

from harness.certify.rows import MatrixRun
from harness.checker.judge import EXIT_STATUS
from harness.checker.verdict import FAIL, PASS
from harness.cli.options import add_setting
from harness.errors import BadInput
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import BaselineFailed, explore
from harness.report.folders import reports_root
from harness.run.session import session
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline

UNITS = {"s": 1, "m": 60, "h": 3600}


def budget(text: str) -> float:
    """`30m`, `90s`, `1h` or `1.5h` in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh])\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a budget: a positive number with s, m or h (30m)")
    return float(match.group(1)) * UNITS[match.group(2)]


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("explore", help="search a sink's fault space within a time budget")
    add_setting(parser, "sink", required=True, default=None)
    add_setting(parser, "pipeline")
    parser.add_argument("--budget", type=budget, default=budget("30m"), metavar="T",
                        help="time to spend, e.g. 30m, 90s, 1h (default 30m)")
    parser.add_argument("--stop-at-first", action="store_true", help="stop at the first failing scenario")
    add_setting(parser, "seed")
    add_setting(parser, "records")
    add_setting(parser, "stall_timeout", metavar="S")
    add_setting(parser, "rate", metavar="R")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    load_pipeline(args.pipeline)
    resolve_sink(args.sink)
    run = MatrixRun(args.sink, args.pipeline, args.seed, args.records, args.stall_timeout, args.rate)
    store = CoverageStore(reports_root())
    with session() as opened:
        try:
            found = explore(opened.cluster, run, args.budget, store, args.stop_at_first)
        except BaselineFailed as failed:
            print(f"the baseline did not pass, nothing explored: {failed}")
            return EXIT_STATUS[failed.row.outcome]
    covered = found.covered
    assert covered is not None
    print(f"\n{found.subject}: {len(found.rows)} scenarios in {found.seconds / 60:.1f} min "
          f"({found.per_hour():.0f} an hour); {found.progress()}")
    print(f"coverage store {store.path}: every explore of this code so far: {covered.runs} runs, "
          f"{len(covered.classes)} classes, {covered.combinations} combinations, {covered.failures} failures")
    for combination, row in found.failures:
        found_anomalies = ", ".join(f"{k}={v}" for k, v in row.anomalies.items())
        print(f"FAIL {combination.key}: {found_anomalies}; shrink it: eo-harness shrink "
              f"{opened.folder / row.scenario.name}")
    if found.failures:
        return EXIT_STATUS[FAIL]
    if not found.rows:
        raise BadInput(f"a budget of {args.budget:g} s ran no combination after the baseline: give it more time")
    return EXIT_STATUS[PASS]
