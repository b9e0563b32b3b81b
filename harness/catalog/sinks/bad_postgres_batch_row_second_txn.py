"""KNOWN BAD: PostgreSQL from `foreachBatch`, for the postgres output, with the batch row written in a
second transaction after the rows' own.

Bug: the rows commit, then the (query id, batch id) row commits. A driver that dies between the two
commits (or between the rows' commit and Spark's commit log, its batch row not yet written) leaves the
rows without their batch row; the restarted query runs the batch again, finds no row, and writes the
rows a second time. Must produce: `duplicate` and `batch_committed_twice`
(kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

OUTPUT = "postgres"  # the output it writes (harness.output): run and certify it with --output postgres


class RowsThenBatchRow:
    """Skips a batch whose row exists; else commits its rows, then its row."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.conninfo = context.conninfo()
        self.table = context.table
        self.batches = context.batch_table
        self.query_id = context.sink_id

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        import psycopg
        from psycopg import sql

        rows = frame.selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").collect()
        with psycopg.connect(self.conninfo) as connection, connection.cursor() as cursor:
            cursor.execute(sql.SQL("SELECT 1 FROM {} WHERE query_id = %s AND batch_id = %s")
                           .format(sql.Identifier(self.batches)), (self.query_id, batch_id))
            if cursor.fetchone() is not None:
                return
            with cursor.copy(sql.SQL("COPY {} (key, value, batch_id) FROM STDIN")
                             .format(sql.Identifier(self.table))) as copy:
                for row in rows:
                    copy.write_row((row.key, row.value, batch_id))
            connection.commit()  # the bug: the rows are committed without the batch row
            cursor.execute(sql.SQL("INSERT INTO {} (query_id, batch_id) VALUES (%s, %s)")
                           .format(sql.Identifier(self.batches)), (self.query_id, batch_id))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(RowsThenBatchRow(context))
