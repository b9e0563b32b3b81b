"""`run`: one scenario end to end (cluster, pipeline, sink, fault schedule) and its report."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from harness.checker.judge import EXIT_STATUS
from harness.cli.console import table
from harness.cli.options import add_dependency_settings, add_setting, refuse_renamed
from harness.cluster.topology import Cluster
from harness.errors import BadInput
from harness.evidence import write_evidence
from harness.faults.glossary import parse_steps
from harness.faults.spec import (
    TABLE,
    TRANSACTIONAL,
    FaultStep,
    random_schedule,
    schedule_from_json,
    schedule_to_json,
)
from harness.output.registry import store
from harness.progress import say
from harness.report.folders import checked_name
from harness.run.flink_session import flink_scenario, flink_session, resolve_job
from harness.run.session import checked_output, checked_store, scenario, session
from harness.settings import SETTINGS, positive_number
from harness.subject.code_spec import resolve_sink
from harness.subject.dependencies import from_settings
from harness.subject.pipeline import load_pipeline


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("run", help="run one scenario: a pipeline, a sink, a fault schedule; write its report")
    add_setting(parser, "pipeline")
    add_setting(parser, "sink")
    add_setting(parser, "output")
    add_setting(parser, "store")
    parser.add_argument("--fault", action="append", default=[], metavar="SPEC",
                        help="fault step, e.g. kill:sender@txn.pre_commit#2 (repeatable)")
    parser.add_argument("--schedule", type=Path, help="replay a schedule.json written by an earlier run")
    parser.add_argument("--random-faults", type=int, default=0, metavar="N", help="N random steps drawn from --seed")
    add_setting(parser, "seed")
    add_setting(parser, "records")
    parser.add_argument("--name", default="scenario", help="the scenario's name in the report")
    add_setting(parser, "stall_timeout", metavar="S")
    add_setting(parser, "state_store")
    add_setting(parser, "restarts", metavar="N")
    add_setting(parser, "engine_read")
    add_dependency_settings(parser)
    add_setting(parser, "engine")
    add_setting(parser, "job", no_default=True)
    parser.add_argument("--input-rate", type=input_rate, default=0.0, metavar="R",
                        help="live input: produce R records/s while the stream runs (default 0: a backlog first); "
                             "not a setting: certify's live rows take --live-rate")
    refuse_renamed(parser)
    parser.set_defaults(func=command)


def input_rate(text: str) -> float:
    """Records/s of live input, or 0 for a backlog."""
    try:
        backlog = float(text) == 0
    except ValueError:
        backlog = False
    return 0.0 if backlog else positive_number(text, "--input-rate", "0, or records per second")


def schedule(faults: list[str], replay: Path | None, random_steps: int) -> list[FaultStep]:
    """The steps from specs or a saved schedule (a random draw waits for the sink's baseline)."""
    if sum(bool(x) for x in (faults, replay, random_steps)) > 1:
        raise BadInput("give --fault, --schedule or --random-faults, not several")
    if replay is not None:
        try:
            return schedule_from_json(replay.read_text())
        except (OSError, ValueError, TypeError) as error:
            raise BadInput(f"schedule file {replay}: {error}") from None
    return parse_steps(faults)


def observed_kind(cluster: Cluster, args: argparse.Namespace) -> str:
    """Whether the sink writes in transactions, seen at the gate in a fault-free run (as certify does)."""
    baseline = scenario(cluster, f"{args.name}-baseline", pipeline=args.pipeline, sink=args.sink,
                        records=args.records, seed=args.seed, stall_timeout=args.stall_timeout,
                        state_store=args.state_store, output=args.output, store=args.store,
                        dependencies=args.dependencies).run()
    kind = baseline.sink_kind
    say(f"sink {args.sink}: observed kind '{kind}' in its baseline; drawing {kind} fault points")
    return kind


def command(args: argparse.Namespace) -> int:
    checked_name(args.name)
    if args.engine == "flink":
        return flink_command(args)
    if args.job:
        raise BadInput("--job names a Flink job: give --engine flink, or a sink with --sink")
    load_pipeline(args.pipeline)
    checked_output(resolve_sink(args.sink), args.output)
    checked_store(args.output, args.store)
    steps = schedule(args.fault, args.schedule, args.random_faults)
    args.dependencies = from_settings(partial(getattr, args))
    with session(output=args.output, store=args.store, dependencies=args.dependencies) as opened:
        if args.random_faults:
            kind = observed_kind(opened.cluster, args)
            steps = random_schedule(args.seed, args.random_faults, transactional=kind == TRANSACTIONAL,
                                    table=kind == TABLE, points=store(args.output).points)
        run = opened.scenario(args.name, pipeline=args.pipeline, sink=args.sink, faults=steps, records=args.records,
                              seed=args.seed, stall_timeout=args.stall_timeout, state_store=args.state_store,
                              rate=args.input_rate, restarts=args.restarts, output=args.output,
                              store=args.store, dependencies=args.dependencies,
                              engine_read=args.engine_read == "yes")
        write_evidence(run.report_dir / "schedule.json", schedule_to_json(steps))
        result = run.run()
    print(table([result]))
    print(f"report: {result.report_dir}/index.html")
    return EXIT_STATUS[result.outcome]


def flink_command(args: argparse.Namespace) -> int:
    """One scenario of a Flink job on a Flink session cluster (a backlog input, into Kafka)."""
    if args.random_faults or args.input_rate:
        raise BadInput("--engine flink takes --fault or --schedule; --random-faults and --input-rate are Spark's")
    job = resolve_job(args.job or SETTINGS["job"].default)
    steps = schedule(args.fault, args.schedule, 0)
    with flink_session() as opened:
        run = flink_scenario(opened.cluster, args.name, job=job, faults=steps, records=args.records, seed=args.seed,
                             stall_timeout=args.stall_timeout)  # type: ignore[arg-type]
        write_evidence(run.report_dir / "schedule.json", schedule_to_json(steps))
        result = run.run()
    print(table([result]))
    print(f"report: {result.report_dir}/index.html")
    return EXIT_STATUS[result.outcome]
