"""Spark's streaming sink of Apache Paimon (`format("paimon")`) into a primary-key table, for the paimon output
(Spark 3.5): the table's key is the record itself (`value`), so a replayed batch (the driver died between
Paimon's commit and Spark's commit log) writes the same keys again and changes no row; the table is read as
Paimon reads it, its files merged by key (deduplicate: the newest write of a key). Expected: exactly-once
under every fault, a replay an idempotent repeat."""

from harness.catalog.sinks.paimon_streaming import create_table

OUTPUT = "paimon"  # the output it writes (harness.output): run and certify it with --output paimon
PROPERTIES = "'primary-key' = 'value', 'bucket' = '2'"


def sink(frame, context):  # type: ignore[no-untyped-def]
    create_table(frame, context.table_name, PROPERTIES)
    return frame.writeStream.format("paimon").option("path", context.table_path)
