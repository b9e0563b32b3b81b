"""PostgreSQL upsert from `foreachBatch`, for the postgres output: a state table (one row per key, `TABLE =
"state"`; the harness makes `key` its primary key) that each batch upserts by key, every key set to the
batch's final value (`INSERT ... ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`), with the
(query id, batch id) row in the same transaction, first: a batch whose row is already there (a replay after
the driver died between the commit and Spark's commit log) is skipped, and a second attempt running at once
waits on the first's row lock, then skips. For an update-mode pipeline such as running_totals. Expected:
exactly-once under every fault."""

OUTPUT = "postgres"  # the output it writes (harness.output): run and certify it with --output postgres
TABLE = "state"  # one row per key: judged on each key's row against its final value (harness.checker.state_table)
UPSERT = ("INSERT INTO {table} AS t (key, value, batch_id) SELECT key, value, %s FROM {updates} "
          "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, batch_id = EXCLUDED.batch_id")


class BatchUpsert:
    """Upserts a batch in one transaction keyed by (the sink's id, the batch id). The sink's id is the same
    across the query's restarts (a query id made anew at each start would not recognize a replay)."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.conninfo = context.conninfo()
        self.table = context.table
        self.batches = context.batch_table
        self.query_id = context.sink_id

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        import psycopg
        from psycopg import sql

        rows = frame.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").collect()
        with psycopg.connect(self.conninfo) as connection, connection.cursor() as cursor:  # commits on leaving
            cursor.execute(sql.SQL("INSERT INTO {} (query_id, batch_id) VALUES (%s, %s) ON CONFLICT DO NOTHING")
                           .format(sql.Identifier(self.batches)), (self.query_id, batch_id))
            if cursor.rowcount == 0:
                return  # committed before: nothing more to write
            cursor.execute("CREATE TEMPORARY TABLE updates (key text, value text) ON COMMIT DROP")
            with cursor.copy("COPY updates (key, value) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row((row.key, row.value))
            cursor.execute(sql.SQL(UPSERT).format(table=sql.Identifier(self.table), updates=sql.Identifier("updates")),
                           (batch_id,))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(BatchUpsert(context))
