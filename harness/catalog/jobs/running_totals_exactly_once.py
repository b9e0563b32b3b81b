"""Reference for a changelog: each user's running count and sum of amounts (in cents), a Flink SQL GROUP BY whose
updates go to Kafka through the upsert-kafka sink with exactly-once delivery. The aggregate's state is in the
checkpoint with the source's offsets, so a restored job emits the same totals again, inside transactions that are
aborted; each running total is committed once. Judged by the running totals pipeline's model
(harness.catalog.pipelines.running_totals): every total a user shows is a running sum, the last one required."""

from __future__ import annotations

from harness.catalog.jobs.kafka_exactly_once import DELIVERY, TRANSACTION_TIMEOUT_MS, create_source, output_options

PIPELINE = "running_totals"


def job(env, context):  # noqa: ANN001, ANN201 - PyFlink's types, imported in Flink's client only
    """The aggregate's INSERT, submitted: its TableResult."""
    from pyflink.table import StreamTableEnvironment

    tables = StreamTableEnvironment.create(env)
    create_source(tables, context)
    tables.execute_sql(f"""
        CREATE TABLE totals (
          `key` STRING, `user` STRING, `count` BIGINT, total_cents BIGINT,
          PRIMARY KEY (`key`) NOT ENFORCED
        ) WITH (
          'connector' = 'upsert-kafka', {output_options(context, DELIVERY, TRANSACTION_TIMEOUT_MS)},
          'key.format' = 'raw', 'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY')""")
    return tables.execute_sql("""
        INSERT INTO totals
        SELECT `key`, `key`, COUNT(*), SUM(CAST(ROUND(amount * 100) AS BIGINT)) FROM source GROUP BY `key`""")
