"""KNOWN BAD: Iceberg MERGE from `foreachBatch` that adds each batch's sums to the table's totals, for the
iceberg output and the running_totals pipeline: a state table (one row per user, `TABLE = "state"`).

The stream emits each user's running total. The sink turns it into what the batch added (the total minus
the one it saw last, kept in a table of its own beside the output, `<table_name>_seen`), adds that to the
table's count and total in one MERGE, then records the totals it saw in a second commit.

Bug: the MERGE and the record of what it saw are two commits, and nothing tells Iceberg which batch the
MERGE is. When the driver dies between them (after the table's commit, before Spark's commit log has the
batch), the restarted query runs the batch again, finds the old record, computes the same sums and adds
them a second time. The table keeps one row per user, so no row is duplicated: its totals are wrong.
Must produce: `wrong_value` and `batch_committed_twice` (kill-driver-table.committed:
`kill:driver@table.committed:2`).
"""

OUTPUT = "iceberg"  # the output it writes (harness.output): run and certify it with --output iceberg
TABLE = "state"  # one row per key: judged on each key's row against its final value (harness.checker.state_table)
TOTAL = "user STRING, count BIGINT, total_cents BIGINT"  # running_totals' value


class AddSums:
    """Adds what a batch added to each user's count and total, then records the totals it saw."""

    properties = ""  # the output table's TBLPROPERTIES, where a variant sets some

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.table = context.table_name
        self.seen = f"{context.table_name}_seen"
        self.view = "running_totals"  # a view of the batch's rows, in the driver's one session

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        spark = frame.sparkSession
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {self.table.rpartition('.')[0]}")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {self.table} "
                  "(key STRING, count BIGINT, total_cents BIGINT, value STRING) USING iceberg"
                  + (f" TBLPROPERTIES ({self.properties})" if self.properties else ""))
        spark.sql(f"CREATE TABLE IF NOT EXISTS {self.seen} (key STRING, count BIGINT, total_cents BIGINT) "
                  "USING iceberg")
        totals = frame.selectExpr("CAST(key AS STRING) AS key", f"from_json(CAST(value AS STRING), '{TOTAL}') AS t")
        seen = totals.selectExpr("key", "t.count AS count", "t.total_cents AS total_cents").persist()  # read twice
        seen.createOrReplaceTempView(self.view)
        added = (f"SELECT u.key, u.count - coalesce(s.count, 0) AS count, "
                 f"u.total_cents - coalesce(s.total_cents, 0) AS total_cents "
                 f"FROM {self.view} u LEFT JOIN {self.seen} s ON u.key = s.key")
        spark.sql(f"MERGE INTO {self.table} AS t USING ({added}) AS s ON t.key = s.key "
                  "WHEN MATCHED THEN UPDATE SET t.count = t.count + s.count, "
                  "t.total_cents = t.total_cents + s.total_cents, t.value = to_json(named_struct('user', t.key, "
                  "'count', t.count + s.count, 'total_cents', t.total_cents + s.total_cents)) "
                  "WHEN NOT MATCHED THEN INSERT (key, count, total_cents, value) VALUES (s.key, s.count, "
                  "s.total_cents, to_json(named_struct('user', s.key, 'count', s.count, "
                  "'total_cents', s.total_cents)))")
        spark.sql(f"MERGE INTO {self.seen} AS s USING {self.view} AS u ON s.key = u.key "  # the second commit
                  "WHEN MATCHED THEN UPDATE SET s.count = u.count, s.total_cents = u.total_cents "
                  "WHEN NOT MATCHED THEN INSERT (key, count, total_cents) VALUES (u.key, u.count, u.total_cents)")
        spark.catalog.dropTempView(self.view)
        seen.unpersist()


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(AddSums(context))
