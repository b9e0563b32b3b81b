"""KNOWN BAD: Delta Lake from `foreachBatch` with a plain append, for the delta output.

Bug: nothing tells Delta which batch a write is. When the driver dies after Delta committed batch N
but before Spark's commit log has it, the restarted query runs batch N again and appends it a second
time (apache/iceberg#8809, apache/paimon#9666). Must produce: `duplicate` and `batch_committed_twice`
(kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta


def append(frame, batch_id: int, table: str) -> None:  # type: ignore[no-untyped-def]
    frame.write.format("delta").mode("append").save(table)


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_path
    return frame.writeStream.foreachBatch(lambda batch, batch_id: append(batch, batch_id, table))
