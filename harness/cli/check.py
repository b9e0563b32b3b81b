"""`check`: the verdict on existing topics, without starting anything.

Reads the input topic (read_committed) to feed the pipeline's model, reads the output topic, checks.
"""

from __future__ import annotations

import argparse
import json

from harness.checker.judge import EXIT_STATUS
from harness.cli.options import add_setting
from harness.client.reader import CommittedReader
from harness.client.records import in_produce_order
from harness.client.workload import InputRecord
from harness.errors import BadInput
from harness.subject.pipeline import load_pipeline


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("check", help="check existing input and output topics against a pipeline's model")
    parser.add_argument("--bootstrap", required=True, help="bootstrap servers (host:port)")
    parser.add_argument("--input", required=True, help="input topic")
    parser.add_argument("--output", required=True, help="output topic")
    add_setting(parser, "pipeline", help="dotted module or path/to/pipeline.py, with a model")
    parser.add_argument("--stable-timeout", type=float, default=30.0,
                        help="seconds to wait for open transactions to close before reporting `stuck`")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    return check(args.bootstrap, args.input, args.output, args.pipeline, args.stable_timeout)


def check(bootstrap: str, input_topic: str, output_topic: str, pipeline_name: str, stable_timeout: float) -> int:
    """The verdict on the topics as they are (no faults were run: the output's verdict is the outcome)."""
    pipeline = load_pipeline(pipeline_name)
    if pipeline.differential:
        raise BadInput(f"pipeline '{pipeline_name}' has no model: `check` needs one (without a model the output is "
                       "compared with a fault-free run: use `run` or `certify`)")
    reader = CommittedReader(bootstrap)
    inputs = reader.read(input_topic, stable_timeout=stable_timeout)
    try:
        expected = pipeline.expected(InputRecord.read(r)
                                     for r in in_produce_order(inputs.records))
    except (ValueError, KeyError, TypeError) as error:
        raise BadInput(f"input topic '{input_topic}' holds records the model cannot read: {error!r}") from None
    output_check = pipeline.output_check(expected)
    output = reader.read(output_topic, stable_timeout=stable_timeout, count_uncommitted=True,
                         on_batch=output_check.feed)
    verdict = output_check.verdict(output)
    print(verdict.summary())
    for anomaly in verdict.anomalies.values():
        print(f"  {anomaly.name}: {anomaly.count}; e.g. {json.dumps(anomaly.examples[:3])}")
    for txn in output.open_transactions:
        print(f"  open transaction: {json.dumps(txn)}")
    if output.aborted:
        print(f"  aborted records (visible only under read_uncommitted): {output.aborted}")
    return EXIT_STATUS[verdict.outcome]
