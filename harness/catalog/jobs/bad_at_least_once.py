"""Known-bad: the reference with the sink's at-least-once delivery. It flushes at each checkpoint but writes
outside transactions, so what it wrote after the last completed checkpoint is written again when the job
restarts from it: `duplicate`."""

from __future__ import annotations

from harness.catalog.jobs.kafka_exactly_once import TRANSACTION_TIMEOUT_MS, passthrough

PIPELINE = "passthrough"


def job(env, context):  # noqa: ANN001, ANN201 - PyFlink's types, imported in Flink's client only
    return passthrough(env, context, "at-least-once", TRANSACTION_TIMEOUT_MS)
