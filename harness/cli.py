"""Command-line interface: doctor, images build, smoke; every error is one line and an exit status."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from harness import versions
from harness.errors import EXIT_INFRASTRUCTURE, HarnessError
from harness.interrupt import terminate_like_ctrl_c
from harness.matrix import LIVE_RATE
from harness.report.folders import REPORTS_ENV
from harness.state_stores import STATE_STORES


def _doctor(args: argparse.Namespace) -> int:
    from harness import doctor

    return doctor.run(fix=args.fix)


def _images_build(args: argparse.Namespace) -> int:
    from harness.cluster import images

    images.build_all()
    return 0


def _engine(args: argparse.Namespace) -> int:
    from harness.cluster import engines

    if args.engine_command == "start":
        print(engines.start(args.name, args.pool))
    else:
        engines.stop(args.name)
    return 0


def _smoke(args: argparse.Namespace) -> int:
    from harness import smoke

    return smoke.run(pipeline=args.pipeline, records=args.records, partitions=args.partitions)


def _check(args: argparse.Namespace) -> int:
    from harness import check_command

    return check_command.run(args.bootstrap, args.input, args.output, args.pipeline, args.stable_timeout)


def _run(args: argparse.Namespace) -> int:
    from harness import run_command

    return run_command.run(args.pipeline, args.sink, args.fault, args.schedule, args.random_faults, args.seed,
                           args.records, args.name, args.stall_timeout, args.state_store, args.rate)


def _certify(args: argparse.Namespace) -> int:
    from harness import certify

    docker_hosts = args.docker_hosts if args.docker_hosts is not None else os.environ.get(DOCKER_HOSTS_ENV, "")
    return certify.certify(args.sink, args.quick, args.seed, args.records, args.pipeline, args.out, args.stall_timeout,
                           args.rate, args.dry_run, args.workers, docker_hosts)


STALL_TIMEOUT = 180.0
DOCKER_HOSTS_ENV = "HARNESS_DOCKER_HOSTS"  # as for the pytest plugin's --docker-hosts
PIPELINE_HELP = ("a catalog name (passthrough, fraud_windows, ...), a dotted module or path/to/pipeline.py; "
                 "without a model, checked against fault-free runs of itself")
SINK_HELP = "a catalog name (transactional, builtin_kafka, ...), a dotted module or file.py:sink"
STALL_HELP = "seconds a scenario may go without progress before it is incomplete (no fixed deadline)"


def parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-command per job."""
    root = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    root.add_argument("--reports", type=Path, metavar="DIR",
                      help=f"where reports go (env {REPORTS_ENV}; default ./reports of the current folder)")
    root.add_argument("--kafka", metavar="VERSION", help=f"Kafka broker release (env {versions.KAFKA_ENV}; known "
                      f"to work: {', '.join(versions.KAFKA_VERSIONS)}; default {versions.KAFKA_VERSIONS[0]})")
    root.add_argument("--spark", metavar="VERSION", help=f"Spark release, 3.5 or 4.0 lines (env {versions.SPARK_ENV}; "
                      f"known to work: {', '.join(versions.SPARK_VERSIONS)}; default {versions.SPARK_VERSIONS[0]})")
    commands = root.add_subparsers(dest="command", required=True)

    doctor = commands.add_parser("doctor", help="check (and with --fix, install) the prerequisites")
    doctor.add_argument("--fix", action="store_true", help="install docker.io and debootstrap, start dockerd")
    doctor.set_defaults(func=_doctor)

    images = commands.add_parser("images", help="container images")
    images_commands = images.add_subparsers(dest="images_command", required=True)
    build = images_commands.add_parser("build", help="build every image that is missing")
    build.set_defaults(func=_images_build)

    engine = commands.add_parser("engine", help="another Docker engine on this machine (for --docker-hosts)")
    engine_commands = engine.add_subparsers(dest="engine_command", required=True)
    engine_start = engine_commands.add_parser("start", help="start engine NAME; print its DOCKER_HOST")
    engine_start.add_argument("name")
    engine_start.add_argument("--pool", type=int, default=1, help="its address pool, 10.20<N>.0.0/16 (one per engine)")
    engine_stop = engine_commands.add_parser("stop", help="stop engine NAME")
    engine_stop.add_argument("name")
    engine.set_defaults(func=_engine)

    smoke = commands.add_parser("smoke", help="start the cluster and run the passthrough pipeline end to end")
    smoke.add_argument("--pipeline", default="passthrough", help=PIPELINE_HELP)
    smoke.add_argument("--records", type=int, default=20_000)
    smoke.add_argument("--partitions", type=int, default=4)
    smoke.set_defaults(func=_smoke)

    run = commands.add_parser("run", help="run one scenario: a pipeline, a sink, a fault schedule; write its report")
    run.add_argument("--pipeline", default="passthrough", help=PIPELINE_HELP)
    run.add_argument("--sink", default="builtin_kafka", help=SINK_HELP)
    run.add_argument("--fault", action="append", default=[], metavar="SPEC",
                     help="fault step, e.g. kill:sender@txn.pre_commit#2 (repeatable)")
    run.add_argument("--schedule", type=Path, help="replay a schedule.json written by an earlier run")
    run.add_argument("--random-faults", type=int, default=0, metavar="N", help="N random steps drawn from --seed")
    run.add_argument("--seed", type=int, default=1, help="workload (and random schedule) seed")
    run.add_argument("--records", type=int, default=20_000)
    run.add_argument("--name", default="scenario", help="the scenario's name in the report")
    run.add_argument("--stall-timeout", type=float, default=STALL_TIMEOUT, metavar="S", help=STALL_HELP)
    run.add_argument("--state-store", choices=sorted(STATE_STORES), default="hdfs",
                     help="the state store provider of a stateful pipeline")
    run.add_argument("--rate", type=float, default=0.0, metavar="R",
                     help="live input: produce R records/s while the stream runs (default 0: a backlog first)")
    run.set_defaults(func=_run)

    certify = commands.add_parser("certify", help="run the certification matrix for a sink; write a certificate")
    certify.add_argument("--sink", required=True, help=SINK_HELP)
    certify.add_argument("--quick", action="store_true", help="the subset that catches every known-bad sink")
    certify.add_argument("--seed", type=int, default=1)
    certify.add_argument("--records", type=int, default=20_000)
    certify.add_argument("--pipeline", default="passthrough", help=PIPELINE_HELP)
    certify.add_argument("--out", type=Path, help="certificate folder (default: reports/<run>/)")
    certify.add_argument("--stall-timeout", type=float, default=STALL_TIMEOUT, metavar="S", help=STALL_HELP)
    certify.add_argument("--rate", type=float, default=LIVE_RATE, metavar="R",
                         help="records/s of the live-input rows (the others drain a backlog)")
    certify.add_argument("--workers", type=int, default=1, metavar="N",
                         help="spread the rows after the baseline over N worker processes, each with its own cluster")
    certify.add_argument("--docker-hosts", metavar="URL,URL",
                         help=f"worker i runs on engine i modulo their number (env {DOCKER_HOSTS_ENV}; "
                         "default: every worker on the default engine)")
    certify.add_argument("--dry-run", action="store_true", help="print the scenarios it would run, run none")
    certify.set_defaults(func=_certify)

    check = commands.add_parser("check", help="check existing input and output topics against a pipeline's model")
    check.add_argument("--bootstrap", required=True, help="bootstrap servers (host:port)")
    check.add_argument("--input", required=True, help="input topic")
    check.add_argument("--output", required=True, help="output topic")
    check.add_argument("--pipeline", default="passthrough",
                       help="dotted module or path/to/pipeline.py, with a model")
    check.add_argument("--stable-timeout", type=float, default=30.0,
                       help="seconds to wait for open transactions to close before reporting `stuck`")
    check.set_defaults(func=_check)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.reports is not None:  # the environment carries it to every part of the run, as for pytest
        os.environ[REPORTS_ENV] = str(args.reports.resolve())
    for env, asked in ((versions.KAFKA_ENV, args.kafka), (versions.SPARK_ENV, args.spark)):
        if asked:
            os.environ[env] = asked
    terminate_like_ctrl_c()
    try:
        versions.stack()  # a malformed version is bad input before anything starts
        return int(args.func(args))
    except HarnessError as error:
        print(f"harness: error: {error}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
