"""KNOWN BAD: the driver-side transactional sink, except that a commit that failed is retried blind.

Bug: when `commit_transaction` raises (here: it timed out), the writer starts a new producer and writes
the batch again in a new transaction, trusting that a commit that raised did not commit. It reads its
markers only when the driver starts, so kills and restarts are handled; a commit whose response is
lost is not: the broker applied it, the call timed out, and the batch is written twice. Must produce:
`duplicate` (lost-commit-response: the EndTxn answered by the broker, its response held past the
call's 60 s).
"""

from harness.catalog.sinks.driver_transactional import DriverTransactionalWriter


class BlindRetryWriter(DriverTransactionalWriter):
    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context)
        self.started = False

    def _committed_batches(self) -> set[int]:
        if self.started:  # the bug: a retry in the same driver trusts what it believes was committed
            return self.committed
        self.started = True
        return super()._committed_batches()


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(BlindRetryWriter(context))
