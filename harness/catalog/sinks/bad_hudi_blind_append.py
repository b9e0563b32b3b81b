"""KNOWN BAD: Apache Hudi from `foreachBatch` with a plain insert, for the hudi output (Spark 3.5).

Bug: a batch write records no batch id in its commit (only Hudi's streaming sink does, and skips a batch it
holds). When the driver dies after Hudi completed batch N's commit but before Spark's commit log has it,
the restarted query runs batch N again and inserts it a second time. Must produce: `duplicate` and
`batch_committed_twice` (kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

OUTPUT = "hudi"  # the output it writes (harness.output): run and certify it with --output hudi
OPTIONS = {"hoodie.table.name": "output", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
           "hoodie.datasource.write.operation": "insert", "hoodie.datasource.write.recordkey.field": "key",
           "hoodie.datasource.write.precombine.field": "value", "hoodie.clean.commits.retained": "200",
           "hoodie.keep.min.commits": "210", "hoodie.keep.max.commits": "220"}


def insert(frame, table: str) -> None:  # type: ignore[no-untyped-def]
    frame.write.format("hudi").options(**OPTIONS).mode("append").save(table)


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_path
    return frame.writeStream.foreachBatch(lambda batch, batch_id: insert(batch, table))
