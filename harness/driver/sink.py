"""The sink contract: `sink(frame, context) -> DataStreamWriter`, and the context a sink is given.

Importable on the executors (they unpickle the context inside a sink's partition writers), so it
depends on nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SinkContext:
    """What a sink is told. Fields are only ever appended, with defaults, so sinks written against an
    older context keep working."""

    bootstrap: str  # Kafka through the gate (the chaos route): every write to Kafka goes here
    topic: str  # the output topic (output kafka; made for every scenario)
    sink_id: str  # the sink's stable id: the same across the query's restarts, unique per scenario
    checkpoint: str  # the query's checkpoint folder, on the volume the driver and executors share
    marker_topic: str  # a topic (as many partitions as the output) for sinks that record what they committed
    output: str = "kafka"  # where the harness reads the output: kafka (the topic), or a table (delta, postgres, ...)
    table_path: str = ""  # output delta, hudi: the table's path on the shared volume (write it there); iceberg,
    #                       paimon: the table's folder there (path-based writers take it)
    jdbc_url: str = ""  # output postgres: jdbc:postgresql://host:port/database (for df.write.jdbc)
    host: str = ""  # output postgres: the server's host as the sink reaches it (the route a gate can sit on)
    port: int = 0  # output postgres: the server's port as the sink reaches it
    database: str = ""  # output postgres: the database to write
    user: str = ""  # output postgres: the role to write as (the sinks' own, not the harness's)
    password: str = ""  # output postgres: that role's password (made at random for the run)
    table: str = ""  # output postgres: the table to write (key text, value text, batch_id bigint: made for it;
    #                  key its primary key where the sink keeps a state table)
    batch_table: str = ""  # output postgres: a table for the batches a sink committed (query_id text,
    #                        batch_id bigint, its primary key): a (query id, batch id) row in the rows' transaction
    table_name: str = ""  # output iceberg, paimon: the table's identifier in the session's catalog (harness.db.output);
    #                       the sink creates it, the session has the catalog and the format's SQL extensions

    def conninfo(self) -> str:
        """Output postgres: a libpq connection string for psycopg (`psycopg.connect(context.conninfo())`)."""
        return (f"host={self.host} port={self.port} dbname={self.database} user={self.user} "
                f"password={self.password}")

    def jdbc_properties(self) -> dict[str, str]:
        """Output postgres: the properties for `df.write.jdbc(context.jdbc_url, table, properties=...)`."""
        return {"user": self.user, "password": self.password, "driver": "org.postgresql.Driver"}
