"""KNOWN BAD: PostgreSQL upsert from `foreachBatch` that adds each batch's sums to the stored totals, for
the postgres output and the running_totals pipeline: a state table (one row per user, `TABLE = "state"`).

The stream emits each user's running total. The sink turns it into what the batch added (the total minus
the one it saw last, kept in a table of its own beside the output, `<table>_seen`), adds that to the
stored count and total (`ON CONFLICT (key) DO UPDATE SET value = t.value + EXCLUDED.value`, on the JSON's
fields), commits, then records the totals it saw and the (query id, batch id) row in a second transaction.

Bug: the upsert and the record of what it saw are two commits. When the driver dies between them (after
the upsert's commit, before Spark's commit log has the batch), the restarted query runs the batch again,
finds no batch row and the old record, computes the same sums and adds them a second time. The table keeps
one row per user, so no row is duplicated: its totals are wrong. Must produce: `wrong_value` and
`batch_committed_twice` (kill-driver-table.committed: `kill:driver@table.committed:2`).
"""

OUTPUT = "postgres"  # the output it writes (harness.output): run and certify it with --output postgres
TABLE = "state"  # one row per key: judged on each key's row against its final value (harness.checker.state_table)
FIELDS = ("count", "total_cents")  # running_totals' numbers, added
ADD = ("INSERT INTO {table} AS t (key, value, batch_id) SELECT key, value, %s FROM {updates} "
       "ON CONFLICT (key) DO UPDATE SET value = json_build_object('user', t.key, "
       + ", ".join(f"'{f}', (t.value::json->>'{f}')::bigint + (EXCLUDED.value::json->>'{f}')::bigint" for f in FIELDS)
       + ")::text, batch_id = EXCLUDED.batch_id")
SEEN = ("INSERT INTO {seen} (key, count, total_cents) VALUES (%s, %s, %s) ON CONFLICT (key) DO UPDATE "
        "SET count = EXCLUDED.count, total_cents = EXCLUDED.total_cents")


class AddSums:
    """Adds what a batch added to each user's count and total, then records the totals it saw."""

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.conninfo = context.conninfo()
        self.table = context.table
        self.batches = context.batch_table
        self.seen = f"{context.table}_seen"
        self.query_id = context.sink_id

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        import json

        import psycopg
        from psycopg import sql

        totals = {row.key: json.loads(row.value) for row in frame.selectExpr(
            "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value").collect()}
        table, seen = sql.Identifier(self.table), sql.Identifier(self.seen)
        with psycopg.connect(self.conninfo) as connection, connection.cursor() as cursor:
            cursor.execute(sql.SQL("SELECT 1 FROM {} WHERE query_id = %s AND batch_id = %s")
                           .format(sql.Identifier(self.batches)), (self.query_id, batch_id))
            if cursor.fetchone() is not None:
                return
            cursor.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, count bigint, "
                                   "total_cents bigint)").format(seen))
            cursor.execute(sql.SQL("SELECT key, count, total_cents FROM {} WHERE key = ANY(%s)").format(seen),
                           (list(totals),))
            before = {key: (count, cents) for key, count, cents in cursor.fetchall()}
            cursor.execute("CREATE TEMPORARY TABLE updates (key text, value text) ON COMMIT DROP")
            with cursor.copy("COPY updates (key, value) FROM STDIN") as copy:
                for key, total in totals.items():
                    count, cents = before.get(key, (0, 0))
                    copy.write_row((key, json.dumps({"user": total["user"], "count": total["count"] - count,
                                                     "total_cents": total["total_cents"] - cents})))
            cursor.execute(sql.SQL(ADD).format(table=table, updates=sql.Identifier("updates")), (batch_id,))
            connection.commit()  # the bug: the sums are added without the record of what was seen
            cursor.executemany(sql.SQL(SEEN).format(seen=seen),
                               [(key, t["count"], t["total_cents"]) for key, t in totals.items()])
            cursor.execute(sql.SQL("INSERT INTO {} (query_id, batch_id) VALUES (%s, %s)")
                           .format(sql.Identifier(self.batches)), (self.query_id, batch_id))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(AddSums(context))
