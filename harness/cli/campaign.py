"""`campaign`: explore a matrix of sinks, outputs, stores and releases within one budget; each new anomaly
goes once to the findings index (`findings.md`, `findings.json`) with its evidence and the command that
replays it. Exit 1 when a scenario failed, 0 when none did, 3 when a cell could not run at all."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from harness.certify.rows import MatrixRun
from harness.certify.shards import Shard
from harness.checker.judge import EXIT_STATUS
from harness.checker.verdict import FAIL, PASS
from harness.cli.explore import budget
from harness.cli.options import add_search_settings, add_setting
from harness.errors import EXIT_INFRASTRUCTURE
from harness.explore.campaign import MIN_CELL_S, check_budget, plan, run_campaign
from harness.explore.campaign import described as cell_outcome
from harness.explore.findings import PAGE
from harness.output.registry import stores
from harness.report.folders import reports_root
from harness.subject.dependencies import from_settings

CELL_DEFAULT_S = 360.0  # a cluster, a baseline and a few scenarios


def names(text: str) -> list[str]:
    """`a,b,c` as a list, blanks dropped."""
    found = [part.strip() for part in text.split(",") if part.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"'{text}' names nothing: write names separated by commas")
    return found


def count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count of 1 or more")
    return int(text)


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("campaign", help="explore sinks, outputs, stores and releases within one budget; "
                                 "write each new finding once")
    tables = ",".join(s.name for s in stores() if s.table)
    parser.add_argument("--outputs", type=names, default=names(tables), metavar="A,B",
                        help=f"the outputs to explore (default: the tables, {tables})")
    parser.add_argument("--stores", type=names, default=["volume"], metavar="A,B",
                        help="where tables live: volume, s3, or both (default volume)")
    parser.add_argument("--sinks", type=names, default=[], metavar="A,B",
                        help="the sinks (default: the catalog's reference sinks of each output)")
    parser.add_argument("--releases", type=count, default=2, metavar="N",
                        help="each output's first N releases: Spark's lines, the default first, and for Iceberg "
                             "each Iceberg release of a line (default 2)")
    parser.add_argument("--budget", type=budget, metavar="T",
                        help=f"time for all cells, e.g. 90m, 2h (default {CELL_DEFAULT_S / 60:g} min a cell; at least "
                             f"{MIN_CELL_S / 60:g})")
    parser.add_argument("--shard", type=Shard.parse, metavar="K/N", help="cells i where i %% N == K-1 only")
    parser.add_argument("--findings", type=Path, metavar="DIR",
                        help="the findings index and the coverage store (default: <reports>/campaign)")
    parser.add_argument("--dry-run", action="store_true", help="say the cells and each one's time; run nothing")
    add_setting(parser, "pipeline")
    add_search_settings(parser)
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    cells = plan(args.outputs, args.stores, args.sinks, args.releases)
    if args.shard is not None:
        cells = args.shard.share(cells)
    budget_s = args.budget or CELL_DEFAULT_S * len(cells)
    check_budget(cells, budget_s)
    each = budget_s / 60 / max(len(cells), 1)
    print(f"{len(cells)} cell{'s' if len(cells) != 1 else ''}, {budget_s / 60:g} min ({each:.1f} min each before "
          "what earlier cells leave):")
    for cell in cells:
        print(f"  {cell.name}")
    if args.dry_run or not cells:
        return 0
    folder = args.findings or reports_root() / "campaign"
    base = MatrixRun("", args.pipeline, args.seed, args.records, args.stall_timeout, args.live_rate,
                     restarts=args.restarts, dependencies=from_settings(partial(getattr, args)))
    outcomes = run_campaign(cells, budget_s, base, folder)
    print()
    for outcome in outcomes:
        print(cell_outcome(outcome))
    new = sum(len(o.found) for o in outcomes)
    print(f"\n{new} new finding{'s' if new != 1 else ''}; the index: {folder / PAGE}")
    if any(o.failures for o in outcomes):
        return EXIT_STATUS[FAIL]
    if any(o.stopped for o in outcomes):
        return EXIT_INFRASTRUCTURE
    return EXIT_STATUS[PASS]
