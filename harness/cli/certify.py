"""`certify`: the certification matrix of a sink (with a pipeline), its certificate and exit status; one
shard of it (`--shard K/N`), and `certify merge DIR...` joining the shards' certificates into one."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from harness.certify.certification import certify
from harness.certify.merge import merge
from harness.certify.rows import MatrixRun
from harness.certify.shards import Shard
from harness.cli.options import add_dependency_settings, add_engine, add_setting, engine_subject, refuse_renamed
from harness.errors import BadInput
from harness.subject.dependencies import from_settings

MERGE = "merge"


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("certify", help="run the certification matrix for a sink; write a certificate",
                                 usage="%(prog)s --sink SINK [options]\n"
                                       "       %(prog)s --engine flink [--job JOB] [options]\n"
                                       "       %(prog)s merge DIR... [--out DIR]")
    add_setting(parser, "sink", no_default=True)
    parser.add_argument("merge", nargs="*", metavar="merge DIR",
                        help="join the certificates of every shard (`--shard K/N`) of one certification into one, "
                             "in --out")
    parser.add_argument("--quick", action="store_true",
                        help="a covering subset of the rows, on 1 broker unless --brokers is given: not a "
                             "certification (exit 0 when every row tried passed)")
    add_setting(parser, "seed")
    add_setting(parser, "records")
    add_setting(parser, "pipeline")
    add_setting(parser, "output")
    add_setting(parser, "store")
    parser.add_argument("--out", type=Path, help="certificate folder (default: reports/<run>/certificate/)")
    add_setting(parser, "stall_timeout", metavar="S")
    add_setting(parser, "live_rate", metavar="R")
    add_setting(parser, "restarts", metavar="N")
    add_setting(parser, "engine_read")
    add_engine(parser)
    add_dependency_settings(parser)
    refuse_renamed(parser)
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="spread the rows after the baseline over N worker processes, each with its own cluster "
                             "(default: up to 3 clusters on one engine, as many as shorten the plan with the "
                             "engine's cores shared and as its memory holds, measured)")
    add_setting(parser, "docker_hosts", metavar="URL,URL")
    parser.add_argument("--shard", type=str, metavar="K/N",
                        help="run shard K of N: its own baseline, then the rows i after it where i %% N == K-1 "
                             "(every shard's certificate joined by `certify merge`)")
    parser.add_argument("--dry-run", action="store_true", help="print the scenarios it would run, run none")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    if args.merge:
        return _merge(args)
    run = MatrixRun(engine_subject(args, "certify"), args.pipeline, args.seed, args.records, args.stall_timeout,
                    args.live_rate, restarts=args.restarts, output=args.output, store=args.store,
                    dependencies=from_settings(partial(getattr, args)), engine_read=args.engine_read == "yes",
                    engine=args.engine)
    shard = Shard.parse(args.shard) if args.shard is not None else None
    return certify(run, args.quick, args.out, args.dry_run, args.workers, args.docker_hosts, shard)


def _merge(args: argparse.Namespace) -> int:
    """`certify merge DIR...`: every other option but --out belongs to running a matrix, not to merging."""
    word, *folders = args.merge
    if word != MERGE:
        raise BadInput(f"certify takes no argument {word!r}: `certify --sink SINK` runs, `certify merge DIR...` joins")
    if not folders:
        raise BadInput("certify merge needs the shards' certificate folders: certify merge DIR... [--out DIR]")
    if args.shard is not None or args.dry_run or args.quick or args.workers is not None:
        raise BadInput("certify merge takes the shards' folders and --out only (the shards' certificates say the rest)")
    return merge([Path(folder) for folder in folders], args.out)
