"""KNOWN BAD: Delta Lake from `foreachBatch` with `txnAppId`/`txnVersion`, for the delta output, but an
app id made anew each time the query starts (a random id, a run id, the application's id).

Bug: Delta skips a batch only if its app id already committed that version. A restarted query has
another app id, so the batch it runs again after the driver died between Delta's commit and Spark's
commit log is appended a second time. Must produce: `duplicate` and `batch_committed_twice`
(kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

import uuid

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta


class PerStartAppend:
    """Appends with the batch id as the transaction version of an app id made when the query starts."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = context.table_path
        self.app_id = f"{context.sink_id}-{uuid.uuid4().hex[:8]}"  # the bug: not the same after a restart

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        (frame.write.format("delta").mode("append")
         .option("txnAppId", self.app_id).option("txnVersion", batch_id)
         .save(self.table))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(PerStartAppend(context))
