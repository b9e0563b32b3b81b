"""Delta Lake from `foreachBatch`, made idempotent with Delta's own transaction identifiers, for the
delta output: each batch is appended with `txnAppId` (the sink's id, the same across the query's
restarts) and `txnVersion` (the batch id), so Delta skips a batch whose version it already committed
for that app. Expected: exactly-once under every fault."""

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta


class TxnAppend:
    """Appends a batch with its batch id as the Delta transaction version of a stable app id."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = context.table_path
        self.app_id = context.sink_id

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        (frame.write.format("delta").mode("append")
         .option("txnAppId", self.app_id).option("txnVersion", batch_id)
         .save(self.table))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(TxnAppend(context))
