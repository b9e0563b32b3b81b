"""KNOWN BAD: Iceberg from `foreachBatch` with a plain append, for the iceberg output.

Bug: nothing tells Iceberg which batch a write is (apache/iceberg#8809: its `foreachBatch` writes have no
`txnAppId`/`txnVersion`). When the driver dies after Iceberg committed batch N but before Spark's commit
log has it, the restarted query runs batch N again and appends it a second time. Must produce:
`duplicate` and `batch_committed_twice` (kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

OUTPUT = "iceberg"  # the output it writes (harness.output): run and certify it with --output iceberg


def append(frame, table: str) -> None:  # type: ignore[no-untyped-def]
    spark = frame.sparkSession
    if not spark.catalog.tableExists(table):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {table.rpartition('.')[0]}")
        spark.createDataFrame([], frame.schema).writeTo(table).using("iceberg").create()
    frame.writeTo(table).append()


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_name
    return frame.writeStream.foreachBatch(lambda batch, batch_id: append(batch, table))
