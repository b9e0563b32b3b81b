"""Known-bad: the reference with a transaction timeout shorter than a recovery takes, Flink's own pitfall. A
transaction is pre-committed at a checkpoint and committed once the checkpoint completes; when the job fails in
between and its recovery (a JobManager replaced, the job restarted from the checkpoint) outlasts the timeout, the
broker has already aborted the transaction the restored job then commits: its records are `lost`."""

from __future__ import annotations

from harness.catalog.jobs.kafka_exactly_once import DELIVERY, passthrough

PIPELINE = "passthrough"
TRANSACTION_TIMEOUT_MS = 10_000  # longer than a checkpoint interval, shorter than a recovery


def job(env, context):  # noqa: ANN001, ANN201 - PyFlink's types, imported in Flink's client only
    return passthrough(env, context, DELIVERY, TRANSACTION_TIMEOUT_MS)
