"""PostgreSQL from `foreachBatch`, for the postgres output: each batch's rows and a (query id, batch id)
row written in one transaction, the batch row first: a batch whose row is already there (a replay after
the driver died between the commit and Spark's commit log) is skipped, and a second attempt running at
once waits on the first's row lock, then skips. Expected: exactly-once under every fault."""

OUTPUT = "postgres"  # the output it writes (harness.output): run and certify it with --output postgres


class BatchTransaction:
    """Writes a batch in one transaction keyed by (the sink's id, the batch id). The sink's id is the same
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
            with cursor.copy(sql.SQL("COPY {} (key, value, batch_id) FROM STDIN")
                             .format(sql.Identifier(self.table))) as copy:
                for row in rows:
                    copy.write_row((row.key, row.value, batch_id))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(BatchTransaction(context))
