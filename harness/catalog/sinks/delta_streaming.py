"""Spark's own Delta Lake streaming sink (`format("delta")`), for the delta output. Each batch is one
table version whose `txn` action carries the query's id and the batch id; a batch the table already
holds (a replay after the driver died between Delta's commit and Spark's commit log) is skipped.
Expected: exactly-once under every fault."""

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.format("delta").option("path", context.table_path)
