"""Spark's own Iceberg streaming sink (`format("iceberg")`), for the iceberg output. Each batch is one
snapshot whose summary carries the query's id and the batch id (`spark.sql.streaming.queryId`,
`spark.sql.streaming.epochId`); a batch the table already holds (a replay after the driver died between
Iceberg's commit and Spark's commit log) is skipped. Expected: exactly-once under every fault."""

OUTPUT = "iceberg"  # the output it writes (harness.output): run and certify it with --output iceberg


def create_table(frame, name: str) -> None:  # type: ignore[no-untyped-def]
    """The table, with the stream's columns, made once (a restarted query finds it)."""
    spark = frame.sparkSession
    if not spark.catalog.tableExists(name):
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rpartition('.')[0]}")
        spark.createDataFrame([], frame.schema).writeTo(name).using("iceberg").create()


def sink(frame, context):  # type: ignore[no-untyped-def]
    create_table(frame, context.table_name)
    return frame.writeStream.format("iceberg").outputMode("append").option("path", context.table_name)
