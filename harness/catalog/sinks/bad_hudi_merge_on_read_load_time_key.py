"""KNOWN BAD: Apache Hudi upserts from `foreachBatch` into a merge-on-read table whose record key includes the
time the row was loaded, for the hudi output (Spark 3.5).

Bug: the key is meant to make a replay set the same rows again, but a replayed batch is loaded at another
time, so its rows are new keys: when the driver dies after Hudi committed batch N but before Spark's commit log
has it, the table keeps both loads. Must produce: `duplicate` and `batch_committed_twice`
(kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

from harness.catalog.sinks.hudi_merge_on_read_upsert import OPTIONS as MERGE_ON_READ

OUTPUT = "hudi"  # the output it writes (harness.output): run and certify it with --output hudi
OPTIONS = {**MERGE_ON_READ, "hoodie.datasource.write.recordkey.field": "value,loaded_at",
           "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
           "hoodie.datasource.write.partitionpath.field": ""}  # unpartitioned: the key generator asks for it


def upsert(frame, table: str) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    frame.withColumn("loaded_at", F.current_timestamp().cast("string")).write.format("hudi").options(**OPTIONS) \
        .mode("append").save(table)


def sink(frame, context):  # type: ignore[no-untyped-def]
    table = context.table_path
    return frame.writeStream.foreachBatch(lambda batch, batch_id: upsert(batch, table))
