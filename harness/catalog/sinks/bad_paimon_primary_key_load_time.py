"""KNOWN BAD: Apache Paimon from `foreachBatch` into a primary-key table whose key includes the time the row
was loaded, for the paimon output (Spark 3.5).

Bug: the key is meant to make a replay set the same rows again, but a replayed batch is loaded at another
time, so its rows are new keys: when the driver dies after Paimon committed batch N but before Spark's commit
log has it, the table's merge keeps both loads. Must produce: `duplicate` and `batch_committed_twice`
(kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

from harness.catalog.sinks.paimon_streaming import create_table

OUTPUT = "paimon"  # the output it writes (harness.output): run and certify it with --output paimon


def upsert(frame, table: str) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    loaded = frame.withColumn("loaded_at", F.current_timestamp())
    create_table(loaded, table, "'primary-key' = 'value,loaded_at', 'bucket' = '2'")
    loaded.writeTo(table).append()


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_name
    return frame.writeStream.foreachBatch(lambda batch, batch_id: upsert(batch, table))
