"""`smoke`: bring the cluster up, run one pipeline fault-free through Spark's built-in sink, print its table."""

from __future__ import annotations

import argparse

from harness.checker.judge import EXIT_STATUS
from harness.cli.console import table
from harness.cli.options import add_setting
from harness.run.session import session
from harness.subject.pipeline import load_pipeline

SINK = "builtin_kafka"  # the simplest sink: a smoke run checks the cluster, not a sink


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("smoke", help="start the cluster and run the passthrough pipeline end to end")
    add_setting(parser, "pipeline")
    add_setting(parser, "records")
    parser.add_argument("--partitions", type=int, default=4)
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    load_pipeline(args.pipeline)
    with session() as opened:
        result = opened.scenario("smoke", pipeline=args.pipeline, sink=SINK, records=args.records,
                                 partitions=args.partitions).run()
    print(table([result]))
    print(f"report: {result.report_dir}/index.html")
    return EXIT_STATUS[result.outcome]
