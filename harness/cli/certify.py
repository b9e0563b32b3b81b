"""`certify`: the certification matrix of a sink (with a pipeline), its certificate and exit status."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.certify.certification import certify
from harness.certify.rows import MatrixRun
from harness.cli.options import add_setting


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("certify", help="run the certification matrix for a sink; write a certificate")
    add_setting(parser, "sink", required=True, default=None)
    parser.add_argument("--quick", action="store_true", help="the subset that catches every known-bad sink")
    add_setting(parser, "seed")
    add_setting(parser, "records")
    add_setting(parser, "pipeline")
    add_setting(parser, "output")
    parser.add_argument("--out", type=Path, help="certificate folder (default: reports/<run>/certificate/)")
    add_setting(parser, "stall_timeout", metavar="S")
    add_setting(parser, "rate", metavar="R")
    add_setting(parser, "restarts", metavar="N")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="spread the rows after the baseline over N worker processes, each with its own cluster")
    add_setting(parser, "docker_hosts", metavar="URL,URL")
    parser.add_argument("--dry-run", action="store_true", help="print the scenarios it would run, run none")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    run = MatrixRun(args.sink, args.pipeline, args.seed, args.records, args.stall_timeout, args.rate,
                    restarts=args.restarts, output=args.output)
    return certify(run, args.quick, args.out, args.dry_run, args.workers, args.docker_hosts)
