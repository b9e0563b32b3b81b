"""KNOWN BAD: the fail-stop driver-side sink (fail_stop_transactional), which also notes a batch that
failed and, when the restarted query re-runs it, skips it, so that one poison batch cannot stop the
stream forever.

Bug: a batch fails for reasons that have nothing to do with its content (a commit the broker aborted
after a timeout, a lost connection). The batch's transaction was aborted, so skipping its re-run loses
it. Must produce: `lost` (delay-endtxn-txn.pre_commit-long: the commit held past the transaction
timeout fails the query, and its restart skips the batch).
"""

from __future__ import annotations

from pathlib import Path

from harness.catalog.sinks.driver_transactional import DriverTransactionalWriter


class SkipFailedBatch(DriverTransactionalWriter):
    """Notes each failed batch id in a file beside the query's checkpoint (it survives a restart)."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context, attempts=1)
        self.failed = Path(f"{context.checkpoint}-failed-batches")

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        if self.failed.exists() and str(batch_id) in self.failed.read_text().split():
            return  # failed before: skipped, never written
        try:
            super().__call__(frame, batch_id)
        except Exception:
            with self.failed.open("a") as noted:
                noted.write(f"{batch_id}\n")
            raise


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(SkipFailedBatch(context))
