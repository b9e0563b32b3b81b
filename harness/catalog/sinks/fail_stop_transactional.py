"""Exactly-once from the driver, fail-stop: the driver-side transactional sink (driver_transactional)
without retries. Any Kafka error (a commit the broker aborted, a fenced producer, a timeout) is raised,
so Spark fails the query, as most sinks are written: the deployment's supervisor starts it again on its
checkpoint, and the restarted driver re-runs the failed batch with the same id. Its new producer's
`init_transactions()` fences the old one and settles what it left open, and the markers topic says
whether the batch was committed before the failure: a committed batch is skipped, any other written.

Exactly-once under a supervisor that restarts failed queries (the harness's `restarts` setting); with
none, a failed query stops the output (`query_failed`).
"""

from __future__ import annotations

from harness.catalog.sinks.driver_transactional import DriverTransactionalWriter


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(DriverTransactionalWriter(context, attempts=1))
