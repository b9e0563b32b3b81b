"""Reference: Flink SQL from Kafka to Kafka with the sink's exactly-once delivery (Kafka transactions committed
when a checkpoint completes), a transaction timeout longer than any recovery takes, and the source reading only
committed input. The passthrough pipeline's results (harness.catalog.pipelines.passthrough): each input record
once, with `amount_cents` added, keyed by its key."""

from __future__ import annotations

PIPELINE = "passthrough"  # the pipeline whose model judges the output
TRANSACTION_TIMEOUT_MS = 120_000  # past a JobManager's replacement and a restart from the checkpoint (~50 s)
DELIVERY = "exactly-once"


def job(env, context):  # noqa: ANN001, ANN201 - PyFlink's types, imported in Flink's client only
    return passthrough(env, context, DELIVERY, TRANSACTION_TIMEOUT_MS)


def passthrough(env, context, delivery: str, transaction_timeout_ms: int):  # noqa: ANN001, ANN201
    """The INSERT from the input's table to the output's, submitted: its TableResult."""
    from pyflink.table import StreamTableEnvironment

    tables = StreamTableEnvironment.create(env)
    create_source(tables, context)
    tables.execute_sql(f"""
        CREATE TABLE sink (
          id STRING, `key` STRING, seq BIGINT, ts BIGINT, amount DOUBLE, amount_cents BIGINT
        ) WITH (
          'connector' = 'kafka', {output_options(context, delivery, transaction_timeout_ms)},
          'key.format' = 'raw', 'key.fields' = 'key', 'value.format' = 'json')""")
    return tables.execute_sql(
        "INSERT INTO sink SELECT id, `key`, seq, ts, amount, CAST(ROUND(amount * 100) AS BIGINT) FROM source")


def create_source(tables, context) -> None:  # noqa: ANN001 - PyFlink's TableEnvironment
    """The input's table, `source`: the workload's JSON records, read committed, from the offsets its consumer
    group committed at the last completed checkpoint (the earliest on a first start)."""
    tables.execute_sql(f"""
        CREATE TABLE source (
          id STRING, `key` STRING, seq BIGINT, ts BIGINT, amount DOUBLE
        ) WITH (
          'connector' = 'kafka', 'topic' = '{context.input_topic}',
          'properties.bootstrap.servers' = '{context.bootstrap_servers}',
          'properties.group.id' = '{context.group_id}',
          'properties.isolation.level' = 'read_committed',
          'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'earliest',
          'format' = 'json')""")


def output_options(context, delivery: str, transaction_timeout_ms: int) -> str:  # noqa: ANN001 - the job's context
    """A Kafka sink's options for the output's topic: where it is, its delivery guarantee, and, for exactly-once,
    its stable transactional.id prefix and its transaction timeout."""
    return f"""'topic' = '{context.output_topic}',
          'properties.bootstrap.servers' = '{context.bootstrap_servers}',
          'sink.delivery-guarantee' = '{delivery}',
          'sink.transactional-id-prefix' = '{context.transactional_id_prefix}',
          'properties.transaction.timeout.ms' = '{transaction_timeout_ms}'"""
