"""KNOWN BAD: PostgreSQL through Spark's JDBC writer (`df.write.jdbc`) from `foreachBatch`, for the
postgres output: the executors write, each task its partition in a transaction of its own.

Bug: a batch is committed in parts, one commit per partition, and nothing records which batches were
written. A batch run again (the driver died after some of its partitions committed, before Spark's commit
log has it; a task retried after its commit) writes those partitions a second time. Must produce:
`duplicate` and `batch_committed_twice` (kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

OUTPUT = "postgres"  # the output it writes (harness.output): run and certify it with --output postgres


class JdbcAppend:
    """Appends a batch's rows, with its id, through Spark's JDBC writer."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.url = context.jdbc_url
        self.table = context.table
        self.properties = context.jdbc_properties()

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        from pyspark.sql import functions as F

        rows = frame.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
        rows.withColumn("batch_id", F.lit(batch_id)).write.jdbc(self.url, self.table, mode="append",
                                                                 properties=self.properties)


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(JdbcAppend(context))
