"""Spark's streaming sink of Apache Hudi (`format("hudi")`), for the hudi output (Spark 3.5): a
copy-on-write table, each batch an `insert` commit whose metadata records the batch id
(`_hudi_streaming_sink_checkpoint`), and a batch the table already holds (a replay after the driver died
between Hudi's commit and Spark's commit log) is skipped. Expected: exactly-once under every fault."""

OUTPUT = "hudi"  # the output it writes (harness.output): run and certify it with --output hudi
# an insert keeps every row (no lookup of the key); the cleaner and the archive keep the whole run's history
OPTIONS = {"hoodie.table.name": "output", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
           "hoodie.datasource.write.operation": "insert", "hoodie.datasource.write.recordkey.field": "key",
           "hoodie.datasource.write.precombine.field": "value", "hoodie.clean.commits.retained": "200",
           "hoodie.keep.min.commits": "210", "hoodie.keep.max.commits": "220"}


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.format("hudi").options(**OPTIONS).option("path", context.table_path)
