"""`space`: the fault space of a sink and pipeline: their fault-free baseline, then one line a fault class
with the row that tries it (what `certify` runs, and what its certificate accounts for)."""

from __future__ import annotations

import argparse
from functools import partial

from harness.certify.matrix import BASELINE
from harness.certify.rows import MatrixRun, checked_subject, matrix_session, print_row, run_row
from harness.checker.judge import EXIT_STATUS
from harness.checker.verdict import PASS
from harness.cli.options import add_dependency_settings, add_engine, add_setting, engine_subject
from harness.faults.space import Observation, space
from harness.settings import FLINK, SETTINGS
from harness.subject.dependencies import from_settings


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("space", help="run a sink's baseline and print the fault classes that apply to it")
    add_setting(parser, "sink", no_default=True)
    add_setting(parser, "pipeline")
    add_setting(parser, "output")
    add_setting(parser, "store")
    add_setting(parser, "records")
    add_setting(parser, "seed")
    add_setting(parser, "stall_timeout", metavar="S")
    add_engine(parser)
    add_dependency_settings(parser)
    parser.set_defaults(func=command)


def table(seen: Observation) -> str:
    """The classes of a space, one a line: the class, the row that tries it (or `not tried`), what it tries."""
    classes = space(seen)
    width = max(len(c.name) for c in classes)
    lines = [f"{'class':<{width}}  {'row':<36}  what it tries"]
    lines += [f"{c.name:<{width}}  {c.row if c.tried else 'not tried':<36}  {c.what}" for c in classes]
    return "\n".join(lines)


def command(args: argparse.Namespace) -> int:
    if args.engine != FLINK and args.sink is None:
        args.sink = SETTINGS["sink"].default
    run = MatrixRun(engine_subject(args, "space"), args.pipeline, args.seed, args.records, args.stall_timeout,
                    output=args.output, store=args.store, dependencies=from_settings(partial(getattr, args)),
                    engine=args.engine)
    _, pipeline = checked_subject(run)
    with matrix_session(run) as opened:
        row, result = run_row(opened.cluster, run, BASELINE)
    print_row(row, 1, 1)
    if result is None or row.outcome != PASS:
        print("the baseline did not pass: its space is not known")
        return EXIT_STATUS[row.outcome]
    seen = result.observation
    roles = ", ".join(f"{point} by {' and '.join(sorted(r)) or '?'}" for point, r in sorted(seen.senders.items()))
    print(f"{run.sink} with pipeline {pipeline.name} into the {seen.output} output: a {seen.kind} sink ({roles}); "
          "transaction timeout "
          f"{f'{seen.transaction_timeout_s:g} s' if seen.transaction_timeout_s else 'none seen'}; "
          f"{'a stateful' if seen.stateful else 'a stateless'} pipeline; {len(space(seen))} fault classes")
    print(table(seen))
    return EXIT_STATUS[PASS]
