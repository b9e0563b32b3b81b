"""Delta Lake from `foreachBatch` with Delta's transaction identifiers, each task's rows ordered by a hash of
the value before writing, for the delta output: the way sinks order rows for data skipping (Z-ordering and
Iceberg's hash distribution do the same). A table keeps no row order, so the order of its rows is no
anomaly: expected exactly-once under every fault, as `delta_foreach_batch_txn` is."""

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta


class HashOrderedTxnAppend:
    """Appends a batch, its rows sorted by a hash of their value, under its batch id as the Delta transaction
    version of a stable app id."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = context.table_path
        self.app_id = context.sink_id

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        from pyspark.sql import functions as F

        (frame.sortWithinPartitions(F.xxhash64("value")).write.format("delta").mode("append")
         .option("txnAppId", self.app_id).option("txnVersion", batch_id)
         .save(self.table))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(HashOrderedTxnAppend(context))
