"""`space`: the fault space of a sink and pipeline: their fault-free baseline, then one line a fault class
with the row that tries it (what `certify` runs, and what its certificate accounts for)."""

from __future__ import annotations

import argparse
from functools import partial

from harness.certify.matrix import BASELINE
from harness.certify.rows import MatrixRun, print_row, run_row
from harness.checker.judge import EXIT_STATUS
from harness.checker.verdict import PASS
from harness.cli.options import add_dependency_settings, add_setting
from harness.faults.space import Observation, space
from harness.run.session import checked_output, checked_store, session
from harness.subject.code_spec import resolve_sink
from harness.subject.dependencies import from_settings
from harness.subject.pipeline import load_pipeline


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("space", help="run a sink's baseline and print the fault classes that apply to it")
    add_setting(parser, "sink")
    add_setting(parser, "pipeline")
    add_setting(parser, "output")
    add_setting(parser, "store")
    add_setting(parser, "records")
    add_setting(parser, "seed")
    add_setting(parser, "stall_timeout", metavar="S")
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
    load_pipeline(args.pipeline)
    checked_output(resolve_sink(args.sink), args.output)
    checked_store(args.output, args.store)
    run = MatrixRun(args.sink, args.pipeline, args.seed, args.records, args.stall_timeout, output=args.output,
                    store=args.store, dependencies=from_settings(partial(getattr, args)))
    with session(output=run.output, store=run.store, dependencies=run.dependencies) as opened:
        row, result = run_row(opened.cluster, run, BASELINE)
    print_row(row, 1, 1)
    if result is None or row.outcome != PASS:
        print("the baseline did not pass: its space is not known")
        return EXIT_STATUS[row.outcome]
    seen = result.observation
    roles = ", ".join(f"{point} by {' and '.join(sorted(r)) or '?'}" for point, r in sorted(seen.senders.items()))
    print(f"{args.sink} with pipeline {args.pipeline} into the {seen.output} output: a {seen.kind} sink ({roles}); "
          "transaction timeout "
          f"{f'{seen.transaction_timeout_s:g} s' if seen.transaction_timeout_s else 'none seen'}; "
          f"{'a stateful' if seen.stateful else 'a stateless'} pipeline; {len(space(seen))} fault classes")
    print(table(seen))
    return EXIT_STATUS[PASS]
