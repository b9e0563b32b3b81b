"""Delta Lake MERGE from `foreachBatch`, for the delta output: a state table (one row per key, `TABLE =
"state"`) that each batch's rows upsert by key, for an update-mode pipeline such as running_totals. The
MERGE is made idempotent on replay with Delta's transaction identifiers for DML (the session's
`spark.databricks.delta.write.txnAppId` and `...txnVersion`: the sink's id, the same across the query's
restarts, and the batch id), so Delta skips a batch its app already committed. Expected: exactly-once
under every fault."""

OUTPUT = "delta"  # the output it writes (harness.output): run and certify it with --output delta
TABLE = "state"  # one row per key: judged on each key's row against its final value (harness.checker.state_table)
TXN_APP_ID, TXN_VERSION = "spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion"


class TxnMerge:
    """Upserts a batch by key in one MERGE that carries the batch id as the Delta transaction version."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = context.table_path
        self.app_id = context.sink_id
        self.view = "updates"  # a view of the batch's rows, in the driver's one session

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        spark = frame.sparkSession
        spark.sql(f"CREATE TABLE IF NOT EXISTS delta.`{self.table}` (key STRING, value STRING) USING delta")
        rows = frame.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
        rows.createOrReplaceTempView(self.view)
        spark.conf.set(TXN_APP_ID, self.app_id)
        spark.conf.set(TXN_VERSION, str(batch_id))
        try:
            spark.sql(f"MERGE INTO delta.`{self.table}` AS t USING {self.view} AS s ON t.key = s.key "
                      "WHEN MATCHED THEN UPDATE SET t.value = s.value "
                      "WHEN NOT MATCHED THEN INSERT (key, value) VALUES (s.key, s.value)")
        finally:
            spark.conf.unset(TXN_APP_ID)
            spark.conf.unset(TXN_VERSION)


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(TxnMerge(context))
