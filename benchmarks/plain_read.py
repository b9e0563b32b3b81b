"""A plain read of a table output, nothing checked: the throughput the harness's read-and-check of the same
table is measured against (benchmarks/scale.py). Each gives every row as a Python object the way its
library gives rows, as the plain consume loop of benchmarks/checker.py takes every Kafka record as
confluent-kafka's Message, and nothing more: for Delta, the snapshot's data files (found from the log, as
any reader must) decoded by pyarrow a batch at a time, each batch's rows as dicts (`to_pylist`); for
PostgreSQL, the rows' tuples through a server-side cursor, `BATCH` at a time. A Delta read can also stop at
Arrow (`python=False`): the store's own speed, with no Python object made."""

from __future__ import annotations

import io

from harness.output.commits import Files
from harness.output.delta.log import DeltaLog
from harness.output.postgres.table import BATCH, Endpoint
from harness.output.rows import COLUMNS as DELTA_COLUMNS


def delta_rows(files: Files, path: str, python: bool = True) -> int:
    """The rows of the table's latest snapshot, read with pyarrow (key and value columns), as dicts."""
    import pyarrow.parquet as pq

    log = DeltaLog(files, path)
    snapshot = log.snapshot()
    rows = 0
    for _, name in snapshot.files if snapshot else []:
        for batch in pq.ParquetFile(io.BytesIO(files.read_bytes(log.data_path(name)))).iter_batches(
                batch_size=BATCH, columns=list(DELTA_COLUMNS)):
            if python:
                batch.to_pylist()
            rows += batch.num_rows
    return rows


def postgres_rows(endpoint: Endpoint, table: str) -> int:
    """The table's rows (key and value), read in a transaction through a named cursor, `BATCH` at a time."""
    import psycopg
    from psycopg import sql

    rows = 0
    with psycopg.connect(endpoint.conninfo()) as connection, connection.cursor(name="plain_read") as cursor:
        cursor.itersize = BATCH
        cursor.execute(sql.SQL("SELECT key, value FROM {}").format(sql.Identifier(table)))
        while batch := cursor.fetchmany(BATCH):
            rows += len(batch)
    return rows
