"""Known-bad: the reference with a transaction timeout shorter than a recovery takes, Flink's own pitfall. A
transaction is pre-committed at a checkpoint and committed once the checkpoint completes; when the TaskManager
asking for that commit dies, the restored job commits it again from the checkpoint, and when that recovery (the
failure seen, the tasks restarted on a TaskManager, their state restored) outlasts the timeout, the broker has
already aborted the transaction: its records are `lost`."""

from __future__ import annotations

from harness.catalog.jobs.kafka_exactly_once import DELIVERY, passthrough

PIPELINE = "passthrough"
TRANSACTION_TIMEOUT_MS = 5_000  # longer than a checkpoint interval (2 s), shorter than a recovery (9 s here)


def job(env, context):  # noqa: ANN001, ANN201 - PyFlink's types, imported in Flink's client only
    return passthrough(env, context, DELIVERY, TRANSACTION_TIMEOUT_MS)
