"""KNOWN BAD: Delta Lake from `foreachBatch` with a plain append and auto-compaction on, for the delta output.

Bug: as `bad_delta_blind_append`, nothing tells Delta which batch a write is, so a batch replayed after the
driver died between Delta's commit and Spark's commit log is appended again; Delta's compactions (OPTIMIZE
commits after the writes) move its rows between files meanwhile. Must produce: `duplicate` and
`batch_committed_twice` naming the two writes, never a compaction (kill-driver-table.committed:
`kill:driver@table.committed:2`).
"""

from harness.catalog.sinks.delta_auto_compaction_txn import COMPACTION

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta


def append(frame, table: str) -> None:  # type: ignore[no-untyped-def]
    for key, value in COMPACTION.items():
        frame.sparkSession.conf.set(key, value)
    frame.write.format("delta").mode("append").save(table)


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_path
    return frame.writeStream.foreachBatch(lambda batch, batch_id: append(batch, table))
