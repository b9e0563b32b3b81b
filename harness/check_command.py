"""`python -m harness check`: the verdict on existing topics, without starting anything.

Reads the input topic (read_committed) to feed the pipeline's model, reads the output topic, checks.
"""

from __future__ import annotations

import json

from harness.checker import FAIL, PASS
from harness.errors import EXIT_ANOMALIES, EXIT_INFRASTRUCTURE, EXIT_OK, BadInput
from harness.pipeline import load_pipeline
from harness.reader import CommittedReader, in_produce_order
from harness.workload import InputRecord


def run(bootstrap: str, input_topic: str, output_topic: str, pipeline_name: str, stable_timeout: float) -> int:
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
    return {PASS: EXIT_OK, FAIL: EXIT_ANOMALIES}.get(verdict.outcome, EXIT_INFRASTRUCTURE)
