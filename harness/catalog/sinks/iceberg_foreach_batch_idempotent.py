"""Iceberg from `foreachBatch`, made idempotent by the sink itself, for the iceberg output: each batch is
appended with snapshot properties naming the sink and the batch (`snapshot-property.*` write options, in
the same atomic commit as the rows), and a batch is skipped when a snapshot of the table already names
it. Iceberg's `foreachBatch` writes have no `txnAppId`/`txnVersion` of their own (apache/iceberg#8809).
Expected: exactly-once under every fault."""

OUTPUT = "iceberg"  # the output it writes (harness.output): run and certify it with --output iceberg
SINK, BATCH = "eo.sink", "eo.batch"  # the snapshot properties it records


class IdempotentAppend:
    """Appends a batch unless a snapshot of the table already records this sink's batch id."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = context.table_name
        self.sink_id = context.sink_id

    def committed(self, spark, batch_id: int) -> bool:  # type: ignore[no-untyped-def]
        found = spark.sql(f"SELECT 1 FROM {self.table}.snapshots WHERE summary['{SINK}'] = '{self.sink_id}' "
                          f"AND summary['{BATCH}'] = '{batch_id}' LIMIT 1")
        return bool(found.collect())

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        spark = frame.sparkSession
        if not spark.catalog.tableExists(self.table):
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {self.table.rpartition('.')[0]}")
            spark.createDataFrame([], frame.schema).writeTo(self.table).using("iceberg").create()
        if self.committed(spark, batch_id):
            return
        (frame.writeTo(self.table)
         .option(f"snapshot-property.{SINK}", self.sink_id).option(f"snapshot-property.{BATCH}", str(batch_id))
         .append())


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(IdempotentAppend(context))
