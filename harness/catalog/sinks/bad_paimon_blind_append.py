"""KNOWN BAD: Apache Paimon from `foreachBatch` with a plain append, for the paimon output (Spark 3.5).

Bug: nothing tells Paimon which batch a write is: a batch write commits with no identifier of the
stream's. When the driver dies after Paimon committed batch N but before Spark's commit log has it, the
restarted query runs batch N again and appends it a second time. Must produce: `duplicate` and
`batch_committed_twice` (kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

from harness.catalog.sinks.paimon_streaming import create_table

OUTPUT = "paimon"  # the output it writes (harness.output): run and certify it with --output paimon


def append(frame, table: str) -> None:  # type: ignore[no-untyped-def]
    create_table(frame, table)
    frame.writeTo(table).append()


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_name
    return frame.writeStream.foreachBatch(lambda batch, batch_id: append(batch, table))
